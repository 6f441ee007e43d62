import { describe, expect, it } from 'vitest';
import {
  CANONICAL_OPERATOR,
  type ConditionNode,
  type ConditionValue,
  OPERATORS,
  type Operator,
} from '../../../src/contracts/condition-dsl.ts';
import { compileCondition, RuleEngine } from '../../../src/engine/index.ts';
import { referenceMatches } from '../../helpers/reference-evaluator.ts';

// Every operator × every value shape × every kind of fact value, through every path a comparison can take in the engine:
// alone (index or closure), behind an equality gate (residual rows), inside an `or`, under `not`, and as compiled closure.

const NUMBERS = [-1, 0, 2.5, 5];
const STRINGS = ['', 'a', 'ab', 'b', '5'];
const SCALARS = [...NUMBERS, ...STRINGS, true, false, null];
const LISTS = [[], [5], ['a', 5, null], [true, 'ab', 0, -1]];

const FACT_VALUES: unknown[] = [...SCALARS, Number.NaN, [], ['a', 5], ['ab', null, true], { a: 5 }, 'xaby', 'x'.repeat(10_001)];

function valuesFor(op: Operator): ConditionValue[] {
  switch (CANONICAL_OPERATOR[op]) {
    case '==':
    case '!=':
    case 'contains':
    case 'not_contains':
      return SCALARS;
    case '>':
    case '>=':
    case '<':
    case '<=':
      return [...NUMBERS, ...STRINGS];
    case 'in':
    case 'not_in':
      return LISTS;
    case 'starts_with':
    case 'ends_with':
      return STRINGS;
    case 'regex':
      return ['^a', 'b$', 'a.*b', '', '^x+$'];
    case 'between':
      return [
        [0, 5],
        [2.5, 2.5],
        ['a', 'b'],
        ['', 'ab'],
      ];
  }
}

const comparison = (field: string, op: Operator, value: ConditionValue): ConditionNode => ({ type: 'condition', field, op, value });

describe('every operator against every kind of fact value', () => {
  const cases: { op: Operator; value: ConditionValue }[] = OPERATORS.flatMap((op) => valuesFor(op).map((value) => ({ op, value })));

  it.each(cases)('$op $value agrees with the reference on every path', ({ op, value }) => {
    const leaf = comparison('v', op, value);
    const shapes: ConditionNode[] = [
      leaf,
      { type: 'and', children: [comparison('g', '==', 1), leaf] },
      { type: 'and', children: [comparison('g', 'in', [1, 2]), leaf, { type: 'exists', field: 'g' }] },
      { type: 'or', children: [comparison('g', '==', 'never'), leaf] },
      { type: 'not', child: leaf },
      { type: 'any', field: 'items', condition: leaf },
    ];
    const rules = shapes.map((condition, index) => ({
      id: index + 1,
      name: `shape-${index}`,
      condition_dsl: condition,
      action: `a${index}`,
    }));
    const engine = RuleEngine.compile(rules);
    const closures = shapes.map((shape) => compileCondition(shape));
    const factsList: unknown[] = FACT_VALUES.flatMap((actual) => [{ g: 1, v: actual, items: [{ v: actual }] }]);
    factsList.push({ g: 1 }, { g: 2, items: [] }, {});
    for (const facts of factsList) {
      const expected = shapes.flatMap((shape, index) => (referenceMatches(shape, facts) ? [index + 1] : []));
      expect(engine.evaluate(facts).fired_rules, JSON.stringify(facts).slice(0, 200)).toEqual(expected);
      expect(closures.flatMap((closure, index) => (closure(facts) ? [index + 1] : []))).toEqual(expected);
      for (const rule of rules) expect(engine.explain(rule.id, facts)?.matched).toBe(expected.includes(rule.id));
    }
  });
});

describe('many rules sharing one field through the range index', () => {
  it('agrees with the reference for every threshold and fact value, numbers and strings', () => {
    const bounds: (number | string)[] = [...NUMBERS, ...STRINGS];
    const ops: Operator[] = ['>', '>=', '<', '<=', 'gt', 'gte', 'lt', 'lte'];
    const leaves = bounds.flatMap((bound) => ops.map((op) => comparison('v', op, bound)));
    const conditions: ConditionNode[] = [
      ...leaves,
      ...leaves.map((leaf, index) => ({ type: 'and' as const, children: [leaf, leaves[(index * 7) % leaves.length]!] })),
      comparison('v', 'between', [0, 5]),
      comparison('v', 'between', ['a', 'b']),
    ];
    const rules = conditions.map((condition, index) => ({
      id: index + 1,
      name: `r${index}`,
      condition_dsl: condition,
      action: `a${index % 3}`,
    }));
    const engine = RuleEngine.compile(rules);
    for (const actual of FACT_VALUES) {
      const facts = { v: actual };
      const expected = rules.filter((rule) => referenceMatches(rule.condition_dsl, facts)).map((rule) => rule.id);
      expect(engine.evaluate(facts).fired_rules).toEqual(expected);
    }
  });
});
