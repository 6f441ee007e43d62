import { describe, expect, it } from 'vitest';
import { validateRuleset } from '../../../src/evaluation/ruleset-validation.ts';

const rule = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  action: 'act',
  condition_dsl: { type: 'exists', field: 'a' },
  ...extra,
});

describe('validateRuleset', () => {
  it('accepts an empty or a clean ruleset', () => {
    expect(validateRuleset([])).toEqual({ valid: true, errors: [] });
    expect(validateRuleset([rule('a'), rule('b'), rule('a', { domain: 'other' })])).toEqual({ valid: true, errors: [] });
  });

  it('reports a name used twice in one domain, counting a missing domain as "default"', () => {
    expect(validateRuleset([rule('a'), rule('a', { domain: 'default' }), rule(' a ')]).errors).toEqual([
      { path: 'rules[1].name', message: 'duplicate name "a" in domain "default" (first at rules[0])' },
      { path: 'rules[2].name', message: 'duplicate name "a" in domain "default" (first at rules[0])' },
    ]);
  });

  it('reports a repeated name beside the other problems of either rule, in the same answer', () => {
    expect(validateRuleset([rule('a', { tags: [''] }), rule('a', { priority: 1.5 })]).errors.map((error) => error.path)).toEqual([
      'rules[0].tags[0]',
      'rules[1].priority',
      'rules[1].name',
    ]);
  });

  it('reports field problems and DSL problems with their paths', () => {
    const result = validateRuleset([
      'not a rule',
      { name: 'x', condition_dsl: { type: 'not', child: { type: 'exists' } } },
      rule('y', { priority: 'high', extra: true }),
    ]);
    expect(result.valid).toBe(false);
    const paths = result.errors.map((error) => error.path);
    expect(paths).toContain('rules[0]');
    expect(paths).toContain('rules[1].action');
    expect(paths).toContain('rules[1].condition_dsl.child.field');
    expect(paths).toContain('rules[2].priority');
    expect(paths).toContain('rules[2]');
  });

  it('asks for a missing condition', () => {
    expect(validateRuleset([{ name: 'x', action: 'y' }]).errors).toEqual([
      { path: 'rules[0].condition_dsl', message: 'condition_dsl is required' },
    ]);
  });
});
