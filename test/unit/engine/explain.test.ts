import { describe, expect, it } from 'vitest';
import type { ConditionNode } from '../../../src/contracts/condition-dsl.ts';
import { RuleEngine } from '../../../src/engine/index.ts';

const leaf = (field: string, op: string, value: unknown) => ({ type: 'condition', field, op, value }) as ConditionNode;

function explain(condition: ConditionNode, facts: unknown, name = 'x') {
  const engine = RuleEngine.compile([{ id: 1, name, condition_dsl: condition, action: 'act', enabled: false }]);
  const explanation = engine.explain(1, facts);
  if (explanation === undefined) throw new Error('rule 1 not found');
  return explanation;
}

const bigSpend = { type: 'and', children: [leaf('amount', '>', 5000), leaf('country', 'in', ['US', 'CA'])] } as ConditionNode;

describe('explain', () => {
  it('lists the conditions that held and says so in one sentence', () => {
    expect(explain(bigSpend, { amount: 6000, country: 'US' }, 'big-spend')).toEqual({
      rule_id: 1,
      rule_name: 'big-spend',
      condition_dsl: bigSpend,
      matched: true,
      matching_conditions: ['amount > 5000', 'country in [US, CA]'],
      failing_conditions: [],
      explanation: "Rule 'big-spend' matched: amount > 5000 and country in [US, CA] held.",
    });
  });

  it('lists every leaf of an and that held or failed, with the actual value or (missing)', () => {
    const explanation = explain(bigSpend, { amount: 4200 }, 'big-spend');
    expect(explanation.matched).toBe(false);
    expect(explanation.matching_conditions).toEqual([]);
    expect(explanation.failing_conditions).toEqual(['amount > 5000 (actual: 4200)', 'country in [US, CA] (missing)']);
    expect(explanation.explanation).toBe(
      "Rule 'big-spend' did not match: amount > 5000 failed (actual: 4200) and country in [US, CA] failed (missing).",
    );
    expect(explain(bigSpend, { amount: 6000, country: 'FR' }).matching_conditions).toEqual(['amount > 5000']);
  });

  it('renders one failing condition the way the sentence needs it', () => {
    expect(explain(leaf('amount', 'gt', 5000), { amount: 4200 }).explanation).toBe(
      "Rule 'x' did not match: amount > 5000 failed (actual: 4200).",
    );
  });

  it('explains an or by the branches that held, or by all of them when none did', () => {
    const condition = { type: 'or', children: [leaf('a', '==', 1), leaf('b', '==', 'x'), { type: 'exists', field: 'c' }] } as ConditionNode;
    expect(explain(condition, { a: 2, b: 'x' })).toMatchObject({
      matched: true,
      matching_conditions: ['b == "x"'],
      failing_conditions: [],
    });
    expect(explain(condition, { a: 2, c: null })).toMatchObject({
      matched: false,
      failing_conditions: ['a == 1 (actual: 2)', 'b == "x" (missing)', 'exists c (actual: null)'],
      explanation: 'Rule \'x\' did not match: a == 1 failed (actual: 2), b == "x" failed (missing) and exists c failed (actual: null).',
    });
  });

  it('renders not around its child', () => {
    const condition = { type: 'not', child: leaf('x', '==', 1) } as ConditionNode;
    expect(explain(condition, { x: 2 })).toMatchObject({ matched: true, matching_conditions: ['not (x == 1)'] });
    expect(explain(condition, { x: 1 })).toMatchObject({ matched: false, failing_conditions: ['not (x == 1) (actual: 1)'] });
    const composite = { type: 'not', child: { type: 'and', children: [leaf('x', '==', 1), leaf('y', '<', 2)] } } as ConditionNode;
    expect(explain(composite, { x: 1, y: 0 }).failing_conditions).toEqual(['not (x == 1 and y < 2) (the inner condition held)']);
  });

  it('says which element matched for any, and which failed for all', () => {
    const any = { type: 'any', field: 'items', condition: leaf('sku', '==', 'A') } as ConditionNode;
    expect(explain(any, { items: [{ sku: 'B' }, { sku: 'A' }] }).matching_conditions).toEqual(['any items: sku == "A" (items[1] matched)']);
    expect(explain(any, { items: [{ sku: 'B' }] }).failing_conditions).toEqual(['any items: sku == "A" (no element matched)']);
    expect(explain(any, { items: [] }).failing_conditions).toEqual(['any items: sku == "A" (empty list)']);
    expect(explain(any, {}).failing_conditions).toEqual(['any items: sku == "A" (missing)']);
    expect(explain(any, { items: 'A' }).failing_conditions).toEqual(['any items: sku == "A" (not a list, actual: "A")']);
    const all = {
      type: 'all',
      field: 'items',
      condition: { type: 'and', children: [leaf('qty', '>', 0), { type: 'exists', field: 'sku' }] },
    } as ConditionNode;
    expect(explain(all, { items: [{ qty: 1, sku: 'a' }, { qty: 0 }] }).failing_conditions).toEqual([
      'all items: (qty > 0 and exists sku) (items[1] did not match)',
    ]);
    expect(explain(all, { items: [{ qty: 1, sku: 'a' }] }).matching_conditions).toEqual([
      'all items: (qty > 0 and exists sku) (all 1 elements matched)',
    ]);
    expect(explain(all, { items: [] }).matching_conditions).toEqual(['all items: (qty > 0 and exists sku) (empty list: holds vacuously)']);
  });

  it('renders values readably: quoted strings, bare list items unless ambiguous, between, regex, long lists cut', () => {
    const condition = {
      type: 'and',
      children: [
        leaf('s', 'between', ['a', 'c']),
        leaf('name', 'regex', '^a.*$'),
        leaf('v', 'in', ['5', '', 'a,b', true, null, 2]),
        leaf(
          'w',
          'not_in',
          Array.from({ length: 12 }, (_, index) => index),
        ),
      ],
    } as ConditionNode;
    expect(explain(condition, {}).failing_conditions).toEqual([
      's between [a, c] (missing)',
      'name regex "^a.*$" (missing)',
      'v in ["5", "", "a,b", true, null, 2] (missing)',
      'w not_in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, ... 2 more] (missing)',
    ]);
  });

  it('cuts long actual values and cut long sentences short', () => {
    const explanation = explain(leaf('s', '==', 'x'), { s: 'y'.repeat(500) });
    expect(explanation.failing_conditions[0]).toBe(`s == "x" (actual: "${'y'.repeat(76)}...)`);
    const many = { type: 'and', children: Array.from({ length: 8 }, (_, index) => leaf(`f${index}`, '==', index)) } as ConditionNode;
    expect(explain(many, {}).explanation).toBe(
      "Rule 'x' did not match: f0 == 0 failed (missing), f1 == 1 failed (missing), f2 == 2 failed (missing), f3 == 3 failed (missing), f4 == 4 failed (missing) and 3 more.",
    );
  });

  it('explains facts that are not an object, and never throws on exotic facts', () => {
    expect(explain(bigSpend, 5)).toMatchObject({ matched: false, matching_conditions: [], failing_conditions: [] });
    expect(explain(bigSpend, [1]).explanation).toBe("Rule 'x' did not match: the facts are not a JSON object.");
    const throwing = Object.defineProperty({}, 'amount', {
      enumerable: true,
      get() {
        throw new Error('boom');
      },
    });
    expect(explain(bigSpend, throwing)).toMatchObject({
      matched: false,
      explanation: "Rule 'x' did not match: the facts could not be read.",
    });
    const cyclic: Record<string, unknown> = {};
    cyclic.amount = cyclic;
    expect(explain(bigSpend, cyclic).failing_conditions[0]).toBe('amount > 5000 (actual: an object)');
    expect(explain(leaf('n', '==', 1), { n: 10n }).failing_conditions[0]).toBe('n == 1 (actual: a bigint)');
  });

  it('prints a number too large for JSON (1e400 parses as Infinity) and NaN as they are, not as null', () => {
    expect(explain(leaf('amount', '<', 100), { amount: Number.POSITIVE_INFINITY }).failing_conditions).toEqual([
      'amount < 100 (actual: Infinity)',
    ]);
    expect(explain(leaf('v', '==', null), { v: Number.NaN }).failing_conditions).toEqual(['v == null (actual: NaN)']);
    expect(explain(leaf('s', '<', 0), { s: Number.NEGATIVE_INFINITY }).matching_conditions).toEqual(['s < 0']);
  });

  it('explains disabled rules and answers undefined for unknown ids', () => {
    const engine = RuleEngine.compile([{ id: 3, name: 'off', condition_dsl: leaf('a', '==', 1), action: 'x', enabled: false }]);
    expect(engine.explain(3, { a: 1 })?.matched).toBe(true);
    expect(engine.explain(4, { a: 1 })).toBeUndefined();
  });

  it('never cuts a value between the halves of a character, nor prints line breaks or tabs of a list bare', () => {
    const text = `${'a'.repeat(75)}\u{1F600} thanks`;
    const failing = explain(leaf('note', '==', 'ok'), { note: text }).failing_conditions[0] as string;
    expect(failing).toBe(`note == "ok" (actual: "${'a'.repeat(75)}...)`);
    expect(failing).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
    expect(explain(leaf('code', 'in', ['A\nB', 'C\tD']), { code: 'A' }).failing_conditions).toEqual([
      'code in ["A\\nB", "C\\tD"] (actual: "A")',
    ]);
  });

  it('never cuts a value inside a JSON escape', () => {
    for (let pad = 70; pad <= 78; pad += 1) {
      const failing = explain(leaf('note', '==', 'ok'), { note: `${'a'.repeat(pad)}\u0001\\tail` }).failing_conditions[0] as string;
      const shown = /\(actual: (.*)\.\.\.\)$/.exec(failing)?.[1] ?? '';
      // What is shown parses as the start of a JSON string: no half escape at its end.
      expect(() => JSON.parse(`${shown}"`), `${pad}: ${shown}`).not.toThrow();
    }
  });

  it('cuts long values written in the rule too, so the sentence stays one sentence', () => {
    const long = 'z'.repeat(10_000);
    const explanation = explain(
      {
        type: 'and',
        children: [
          leaf('s', '==', long),
          leaf(
            't',
            'in',
            Array.from({ length: 10 }, (_, i) => `${i}${long.slice(1)}`),
          ),
        ],
      } as ConditionNode,
      {},
    );
    expect(explanation.explanation.length).toBeLessThan(2_000);
    expect(explanation.failing_conditions[0]).toBe(`s == "${'z'.repeat(76)}... (missing)`);
  });

  it('says a regex was not applied to text longer than the limit, instead of showing text that seems to match', () => {
    const explanation = explain(leaf('s', 'regex', '^a'), { s: 'a'.repeat(10_001) });
    expect(explanation.matched).toBe(false);
    expect(explanation.failing_conditions).toEqual(['s regex "^a" (longer than 10000 UTF-16 code units: regex not applied)']);
  });

  it('measures the regex limit in UTF-16 code units, as the operator does, and says so (an emoji is two)', () => {
    const explanation = explain(leaf('s', 'regex', '^😀'), { s: '😀'.repeat(5_001) });
    expect(explanation.matched).toBe(false);
    expect(explanation.failing_conditions).toEqual(['s regex "^😀" (longer than 10000 UTF-16 code units: regex not applied)']);
    expect(explain(leaf('s', 'regex', '^😀'), { s: '😀'.repeat(5_000) }).matched).toBe(true);
  });
});
