import { describe, expect, it } from 'vitest';
import { RuleEngine } from '../../../src/engine/index.ts';
import { AppError } from '../../../src/errors.ts';
import { inlineRules, simulate } from '../../../src/evaluation/simulator.ts';

const stored = { engine: RuleEngine.compile([], { revision: 3 }) };
const gt = (value: number) => ({ type: 'condition', field: 'amount', op: '>', value });

describe('simulate', () => {
  it('numbers inline rules 1..n in input order', () => {
    const result = simulate(stored, {
      rules: [
        { name: 'a', condition_dsl: gt(1), action: 'x' },
        { name: 'b', condition_dsl: gt(1), action: 'y', priority: 9 },
      ],
      facts: { amount: 5 },
    });
    expect(result).toMatchObject({ fired_rules: [2, 1], actions: ['y', 'x'], revision: null });
  });

  it('applies the domain to inline rules too', () => {
    const rules = [
      { name: 'a', condition_dsl: gt(1), action: 'x', domain: 'payments' },
      { name: 'b', condition_dsl: gt(1), action: 'y' },
    ];
    expect(simulate(stored, { rules, facts: { amount: 5 }, domain: 'payments' }).fired_rules).toEqual([1]);
  });

  it('uses the stored engine and reports its revision when no rules are given', () => {
    expect(simulate(stored, { facts: { amount: 5 } })).toMatchObject({ fired_rules: [], revision: 3 });
  });

  it('reports every invalid inline condition at once, with the rule index in the path', () => {
    try {
      inlineRules([
        { name: 'a', condition_dsl: { type: 'or', children: [] }, action: 'x' },
        { name: 'b', condition_dsl: gt(1), action: 'y' },
        { name: 'c', condition_dsl: 'not a tree', action: 'z' },
      ]);
      expect.unreachable('inlineRules accepted invalid conditions');
    } catch (error) {
      expect(error).toBeInstanceOf(AppError);
      expect((error as AppError).code).toBe('DSL_ERROR');
      expect((error as AppError).message).toContain('rules[0].condition_dsl.children');
      expect((error as AppError).message).toContain('rules[2].condition_dsl');
      expect((error as AppError).message).not.toContain('rules[1]');
    }
  });
});
