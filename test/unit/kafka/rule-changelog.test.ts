import { describe, expect, it } from 'vitest';
import { changeKey, mergeReloadTarget, parseRuleChange } from '../../../src/kafka/rule-changelog.ts';

describe('parseRuleChange', () => {
  it('reads a rule change', () => {
    const change = { revision: 12, rule_id: 4, change: 'update', at: '2025-01-01T00:00:00.000Z' };
    expect(parseRuleChange(Buffer.from(JSON.stringify(change)))).toEqual(change);
  });

  it('skips tombstones, bad JSON and values that are not rule changes', () => {
    expect(parseRuleChange(null)).toBeUndefined();
    expect(parseRuleChange(Buffer.from('{'))).toBeUndefined();
    expect(parseRuleChange(Buffer.from(JSON.stringify({ revision: 'x', rule_id: 1, change: 'create', at: '' })))).toBeUndefined();
  });
});

describe('changeKey', () => {
  it('keys by rule so compaction keeps each rule latest change', () => {
    expect(changeKey({ revision: 1, rule_id: 9, change: 'create', at: '' })).toBe('rule-9');
    expect(changeKey({ revision: 1, rule_id: null, change: 'reload', at: '' })).toBe('all');
  });
});

describe('mergeReloadTarget', () => {
  it('keeps the highest revision asked for', () => {
    expect(mergeReloadTarget(null, 3)).toBe(3);
    expect(mergeReloadTarget(5, null)).toBe(5);
    expect(mergeReloadTarget(5, 3)).toBe(5);
    expect(mergeReloadTarget(2, 8)).toBe(8);
  });

  it('lets "the latest" (undefined) cover any revision', () => {
    expect(mergeReloadTarget(undefined, 8)).toBeUndefined();
    expect(mergeReloadTarget(8, undefined)).toBeUndefined();
    expect(mergeReloadTarget(null, undefined)).toBeUndefined();
    expect(mergeReloadTarget(null, null)).toBeNull();
  });
});
