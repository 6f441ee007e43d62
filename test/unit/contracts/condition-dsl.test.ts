import { describe, expect, it } from 'vitest';
import {
  CANONICAL_OPERATOR,
  type CanonicalOperator,
  conditionNodeSchema,
  OPERATORS,
  valueProblem,
} from '../../../src/contracts/condition-dsl.ts';

describe('operators', () => {
  it('map every alias to its symbol and every symbol to itself', () => {
    expect(CANONICAL_OPERATOR.eq).toBe('==');
    expect(CANONICAL_OPERATOR.ne).toBe('!=');
    expect(CANONICAL_OPERATOR.gt).toBe('>');
    expect(CANONICAL_OPERATOR.gte).toBe('>=');
    expect(CANONICAL_OPERATOR.lt).toBe('<');
    expect(CANONICAL_OPERATOR.lte).toBe('<=');
    const canonical = new Set(Object.values(CANONICAL_OPERATOR));
    for (const op of canonical) expect(CANONICAL_OPERATOR[op]).toBe(op);
    expect(Object.keys(CANONICAL_OPERATOR).sort()).toEqual([...OPERATORS].sort());
  });
});

describe('valueProblem', () => {
  it('accepts values that suit each operator', () => {
    const fine: [CanonicalOperator, unknown][] = [
      ['==', null],
      ['!=', 'x'],
      ['>', 5],
      ['<=', 'm'],
      ['in', []],
      ['not_in', [1, 'a', null]],
      ['contains', true],
      ['starts_with', ''],
      ['regex', '^a'],
      ['between', [1, 1]],
      ['between', ['a', 'b']],
    ];
    for (const [op, value] of fine) expect(valueProblem(op, value as never)).toBeUndefined();
  });

  it('names the problem of values that do not suit their operator', () => {
    expect(valueProblem('==', [1])).toBe('operator == takes a single value, not an array');
    expect(valueProblem('>', true)).toBe('operator > takes a number or a string');
    expect(valueProblem('in', 1)).toBe('operator in takes an array of values');
    expect(valueProblem('ends_with', 1)).toBe('operator ends_with takes a string');
    expect(valueProblem('regex', null)).toBe('operator regex takes a pattern string');
    expect(valueProblem('between', [1, 2, 3])).toBe('operator between takes [low, high]');
    expect(valueProblem('between', [null, 2])).toBe('operator between takes two numbers or two strings');
    expect(valueProblem('between', ['b', 'a'])).toBe('operator between needs low <= high');
  });
});

describe('conditionNodeSchema', () => {
  it('parses a nested tree and reports a bad value at its path', () => {
    const tree = {
      type: 'any',
      field: 'items',
      condition: { type: 'or', children: [{ type: 'condition', field: 'sku', op: 'eq', value: 'A' }] },
    };
    expect(conditionNodeSchema.parse(tree)).toEqual(tree);
    const result = conditionNodeSchema.safeParse({ type: 'not', child: { type: 'condition', field: 'a', op: 'between', value: [3, 1] } });
    expect(result.error?.issues.map((issue) => [issue.path, issue.message])).toEqual([
      [['child', 'value'], 'operator between needs low <= high'],
    ]);
  });
});
