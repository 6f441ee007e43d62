import { describe, expect, it } from 'vitest';
import { DEFAULT_DOMAIN, ruleSchema } from '../../../src/contracts/rule.ts';

const condition = { type: 'exists', field: 'a' };

describe('ruleSchema', () => {
  it('applies defaults: domain "default", priority 0, enabled', () => {
    expect(ruleSchema.parse({ id: 1, name: 'r', condition_dsl: condition, action: 'x' })).toEqual({
      id: 1,
      name: 'r',
      domain: DEFAULT_DOMAIN,
      condition_dsl: condition,
      action: 'x',
      priority: 0,
      enabled: true,
    });
  });

  it('refuses unknown fields, bad ids, empty names and invalid conditions', () => {
    const base = { id: 1, name: 'r', condition_dsl: condition, action: 'x' };
    expect(ruleSchema.safeParse({ ...base, extra: 1 }).success).toBe(false);
    expect(ruleSchema.safeParse({ ...base, id: 0 }).success).toBe(false);
    expect(ruleSchema.safeParse({ ...base, name: '  ' }).success).toBe(false);
    expect(ruleSchema.safeParse({ ...base, condition_dsl: { type: 'nope' } }).error?.issues[0]?.path).toEqual(['condition_dsl', 'type']);
  });
});
