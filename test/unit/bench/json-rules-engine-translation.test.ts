import { describe, expect, it } from 'vitest';
import { buildJsonRulesEngine } from '../../../bench/lib/json-rules-engine-peer.ts';
import { TranslationError, translateCondition } from '../../../bench/lib/json-rules-engine-translation.ts';
import type { Fact } from '../../../bench/lib/profile.ts';
import { referenceMatches } from '../../../bench/lib/reference-evaluator.ts';
import type { ConditionNode, ConditionValue, Operator } from '../../../src/contracts/condition-dsl.ts';
import { DEFAULT_DOMAIN, type Rule } from '../../../src/contracts/rule.ts';

function rule(id: number, condition: ConditionNode, priority = 0, action = `action-${id}`): Rule {
  return { id, name: `rule-${id}`, domain: DEFAULT_DOMAIN, condition_dsl: condition, action, priority, enabled: true };
}

function test(field: string, op: Operator, value: ConditionValue): ConditionNode {
  return { type: 'condition', field, op, value };
}

/** Whether json-rules-engine, given the translated rule, fires it for the fact. */
async function jreMatches(condition: ConditionNode, fact: Fact): Promise<boolean> {
  const evaluate = buildJsonRulesEngine([rule(1, condition)]);
  const result = await evaluate(fact);
  return result.fired_rules.includes(1);
}

const FACT: Fact = {
  amount: 120.5,
  country: 'FR',
  email: 'ana@example.org',
  tags: ['vip', 'promo'],
  nothing: null,
  count: '5',
  user: { age: 30, name: 'Ana' },
  items: [{ sku: 'A1' }, { sku: 'B2' }],
};

// Hand-checked: each row states what the DSL contract says the condition gives on FACT.
const OPERATOR_CASES: ReadonlyArray<[string, ConditionNode, boolean]> = [
  ['== on an equal string', test('country', '==', 'FR'), true],
  ['== does not coerce a number to a string', test('count', '==', 5), false],
  ['eq is ==', test('amount', 'eq', 120.5), true],
  ['!= on a different value', test('country', '!=', 'DE'), true],
  ['!= on the same value', test('country', 'ne', 'FR'), false],
  ['> number over number', test('amount', '>', 100), true],
  ['> is false at the bound', test('amount', 'gt', 120.5), false],
  ['> does not coerce "5" to a number', test('count', '>', 3), false],
  ['>= at the bound', test('amount', '>=', 120.5), true],
  ['gte below the value', test('amount', 'gte', 121), false],
  ['< number under number', test('amount', '<', 200), true],
  ['lt string against string', test('country', 'lt', 'GB'), true],
  ['<= at the bound', test('amount', '<=', 120.5), true],
  ['lte string against number is false', test('country', 'lte', 5), false],
  ['in: the value is a member', test('country', 'in', ['DE', 'FR']), true],
  ['in: the value is not a member', test('country', 'in', ['DE', 'ES']), false],
  ['in: no coercion', test('count', 'in', [5, 6]), false],
  ['not_in: not a member', test('country', 'not_in', ['DE', 'ES']), true],
  ['not_in: a member', test('country', 'not_in', ['FR']), false],
  ['not_in: an array fact value is not a scalar', test('tags', 'not_in', ['x']), false],
  ['contains: array membership', test('tags', 'contains', 'vip'), true],
  ['contains: not a member', test('tags', 'contains', 'gift'), false],
  ['contains: substring of a string', test('email', 'contains', '@example'), true],
  ['contains: a number is never a substring', test('count', 'contains', 5), false],
  ['not_contains: array without the value', test('tags', 'not_contains', 'gift'), true],
  ['not_contains: array with the value', test('tags', 'not_contains', 'promo'), false],
  ['not_contains: string without the substring', test('email', 'not_contains', 'zzz'), true],
  ['not_contains: a number fact is neither array nor string', test('amount', 'not_contains', 'x'), false],
  ['starts_with', test('email', 'starts_with', 'ana@'), true],
  ['starts_with on a non-string', test('amount', 'starts_with', '12'), false],
  ['ends_with', test('email', 'ends_with', '.org'), true],
  ['ends_with not matching', test('email', 'ends_with', '.com'), false],
  ['regex matching', test('email', 'regex', '^[a-z]+@example\\.(org|com)$'), true],
  ['regex not matching', test('email', 'regex', '^bob@'), false],
  ['regex on a number is false', test('amount', 'regex', '120'), false],
  ['between inclusive of the bounds', test('amount', 'between', [120.5, 130]), true],
  ['between outside', test('amount', 'between', [0, 100]), false],
  ['between strings', test('country', 'between', ['DE', 'GB']), true],
  ['between a string fact and number bounds', test('count', 'between', [1, 10]), false],
  ['== null on a null value', test('nothing', '==', null), true],
  ['nested path', test('user.age', '>=', 18), true],
  ['array index in a path', test('items.1.sku', '==', 'B2'), true],
  ['array index past the end', test('items.2.sku', '==', 'B2'), false],
  ['exists on a present field', { type: 'exists', field: 'user.name' }, true],
  ['exists on a null field', { type: 'exists', field: 'nothing' }, false],
  ['and', { type: 'and', children: [test('country', '==', 'FR'), test('amount', '>', 500)] }, false],
  ['or', { type: 'or', children: [test('country', '==', 'DE'), test('amount', '<', 500)] }, true],
  ['not', { type: 'not', child: test('country', '==', 'DE') }, true],
];

describe('json-rules-engine translation agrees with hand-checked operator examples', () => {
  it.each(OPERATOR_CASES)('%s', async (_name, condition, expected) => {
    expect(await jreMatches(condition, FACT)).toBe(expected);
    expect(referenceMatches(condition, FACT)).toBe(expected);
  });
});

describe('missing fields', () => {
  // DSL contract: a missing field makes every comparison false, != and not_in included.
  const missingCases: ReadonlyArray<[Operator, ConditionValue]> = [
    ['==', 'x'],
    ['!=', 'x'],
    ['>', 1],
    ['>=', 1],
    ['<', 1],
    ['<=', 1],
    ['in', ['x']],
    ['not_in', ['x']],
    ['contains', 'x'],
    ['not_contains', 'x'],
    ['starts_with', 'x'],
    ['ends_with', 'x'],
    ['regex', '.*'],
    ['between', [0, 1]],
  ];

  it.each(missingCases)('%s on a missing top-level field is false', async (op, value) => {
    expect(await jreMatches(test('absent', op, value), FACT)).toBe(false);
    expect(referenceMatches(test('absent', op, value), FACT)).toBe(false);
  });

  it.each(missingCases)('%s on a missing nested field is false', async (op, value) => {
    expect(await jreMatches(test('user.absent', op, value), FACT)).toBe(false);
    expect(await jreMatches(test('absent.deeper', op, value), FACT)).toBe(false);
  });

  it('reads a path through a primitive as missing, where json-rules-engine alone would hand back the primitive', async () => {
    const fact = { user: 'Ana' };
    expect(await jreMatches(test('user.name', '!=', 'Bob'), fact)).toBe(false);
    expect(await jreMatches(test('user.name', '==', 'Ana'), fact)).toBe(false);
    expect(referenceMatches(test('user.name', '!=', 'Bob'), fact)).toBe(false);
  });

  it('reads a path through null as missing', async () => {
    expect(await jreMatches(test('nothing.inner', '!=', 'x'), FACT)).toBe(false);
  });

  it('negates a comparison on a missing field to true', async () => {
    const condition: ConditionNode = { type: 'not', child: test('absent', '==', 'x') };
    expect(await jreMatches(condition, FACT)).toBe(true);
    expect(referenceMatches(condition, FACT)).toBe(true);
  });

  it('treats a missing field as absent for exists', async () => {
    expect(await jreMatches({ type: 'exists', field: 'absent' }, FACT)).toBe(false);
  });

  it('does not read inherited properties such as constructor', async () => {
    expect(await jreMatches({ type: 'exists', field: 'constructor' }, FACT)).toBe(false);
    expect(await jreMatches({ type: 'exists', field: 'user.constructor' }, FACT)).toBe(false);
  });

  it('prefers a key that literally equals the dotted path', async () => {
    const fact = { 'user.age': 70, user: { age: 30 } };
    expect(await jreMatches(test('user.age', '==', 70), fact)).toBe(true);
    expect(await jreMatches(test('user.age', '==', 30), fact)).toBe(false);
    expect(referenceMatches(test('user.age', '==', 70), fact)).toBe(true);
  });
});

describe('translateCondition', () => {
  it('maps and/or/not to all/any/not and operators to json-rules-engine names', () => {
    const condition: ConditionNode = {
      type: 'and',
      children: [
        test('amount', 'gt', 100),
        { type: 'or', children: [test('country', 'in', ['FR']), { type: 'not', child: test('tags', 'contains', 'vip') }] },
      ],
    };
    expect(translateCondition(condition)).toEqual({
      all: [
        { fact: 'amount', operator: 'greaterThan', value: 100 },
        { any: [{ fact: 'country', operator: 'in', value: ['FR'] }, { not: { fact: 'tags', operator: 'contains', value: 'vip' } }] },
      ],
    });
  });

  it('wraps a bare comparison in all, which json-rules-engine needs at the top', () => {
    expect(translateCondition(test('country', '==', 'FR'))).toEqual({ all: [{ fact: 'country', operator: 'equal', value: 'FR' }] });
  });

  it('rejects array quantifiers with the path of the node', () => {
    const condition: ConditionNode = {
      type: 'and',
      children: [test('amount', '>', 1), { type: 'any', field: 'items', condition: test('sku', '==', 'A1') }],
    };
    expect(() => translateCondition(condition)).toThrow(TranslationError);
    expect(() => translateCondition(condition)).toThrow(
      'root.children[1]: json-rules-engine has no array quantifier, cannot translate "any" over items',
    );
  });
});

describe('buildJsonRulesEngine', () => {
  it('returns fired rules by priority descending then id ascending, with distinct actions in that order', async () => {
    const always = test('amount', '>', 0);
    const evaluate = buildJsonRulesEngine([
      rule(4, always, 1, 'review'),
      rule(2, always, 5, 'decline'),
      rule(3, always, 1, 'review'),
      rule(1, test('amount', '<', 0), 9, 'never'),
      rule(5, always, 5, 'notify'),
    ]);
    expect(await evaluate(FACT)).toEqual({ fired_rules: [2, 5, 3, 4], actions: ['decline', 'notify', 'review'] });
  });

  it('leaves out disabled rules and rules of other domains', async () => {
    const always = test('amount', '>', 0);
    const evaluate = buildJsonRulesEngine([
      rule(1, always),
      { ...rule(2, always), enabled: false },
      { ...rule(3, always), domain: 'other' },
    ]);
    expect((await evaluate(FACT)).fired_rules).toEqual([1]);
  });
});
