import { describe, expect, it } from 'vitest';
import type { ConditionNode } from '../../../src/contracts/condition-dsl.ts';
import type { RuleInput } from '../../../src/contracts/rule.ts';
import { findAccumulateNodes, jsonbOrderedJson } from '../../../src/engine/accumulators.ts';
import { compileCondition, RuleEngine, renderCondition, validateCondition } from '../../../src/engine/index.ts';

const leaf = (field: string, op: string, value: unknown) => ({ type: 'condition', field, op, value });
const failedLogin = leaf('type', '==', 'login_failed');
const accumulate = (fields: Record<string, unknown>) => ({ type: 'accumulate', op: '>=', value: 1, ...fields });
const threeFailures = accumulate({ function: 'count', where: failedLogin, window_seconds: 600, value: 3 }) as ConditionNode;

function rule(id: number, condition: unknown, extra: Partial<RuleInput> = {}): RuleInput {
  return { id, name: `r${id}`, condition_dsl: condition as ConditionNode, action: `act${id}`, ...extra };
}

describe('validateCondition on accumulate', () => {
  it('accepts every function, with and without where, field and window', () => {
    const fine = [
      accumulate({ function: 'count' }),
      accumulate({ function: 'count', field: 'email', where: failedLogin }),
      accumulate({ function: 'sum', field: 'amount', op: 'gt', value: 5000 }),
      accumulate({ function: 'avg', field: 'amount', window_seconds: 60, op: 'between', value: [1, 2.5] }),
      accumulate({ function: 'min', field: 'a.b', op: '<', value: -1 }),
      accumulate({ function: 'max', field: 'a', op: '!=', value: 0, window_seconds: 31_536_000 }),
      { type: 'and', children: [failedLogin, { type: 'not', child: accumulate({ function: 'count' }) }] },
    ];
    for (const dsl of fine) expect(validateCondition(dsl)).toEqual({ valid: true, errors: [] });
  });

  it('reports each problem with its path', () => {
    const cases: [unknown, string, string][] = [
      [accumulate({ function: 'sum' }), 'root.field', 'function sum needs a field: the numeric fact field it aggregates'],
      [
        accumulate({ function: 'median', field: 'a' }),
        'root.function',
        'unknown function "median": expected one of count, sum, avg, min, max',
      ],
      [
        accumulate({ function: 'count', op: 'in', value: [1] }),
        'root.op',
        'unknown operator "in" for accumulate: expected one of ==, !=, >, >=, <, <=, between, eq, ne, gt, gte, lt, lte',
      ],
      [
        accumulate({ function: 'count', value: 'three' }),
        'root.value',
        'value must be a finite number, or [low, high] numbers for between',
      ],
      [accumulate({ function: 'count', value: [1, 2] }), 'root.value', 'operator >= takes a number: the aggregate is a number'],
      [accumulate({ function: 'count', op: 'between', value: 3 }), 'root.value', 'operator between takes [low, high] numbers'],
      [accumulate({ function: 'count', op: 'between', value: [5, 1] }), 'root.value', 'operator between needs low <= high'],
      [accumulate({ function: 'count', window_seconds: 0 }), 'root.window_seconds', 'window_seconds must be at least 1'],
      [accumulate({ function: 'count', window_seconds: 1.5 }), 'root.window_seconds', 'window_seconds must be a whole number of seconds'],
      [
        accumulate({ function: 'count', window_seconds: 31_536_001 }),
        'root.window_seconds',
        'window_seconds must be at most 31536000 (one year)',
      ],
    ];
    for (const [dsl, path, message] of cases) {
      expect(validateCondition(dsl), JSON.stringify(dsl)).toEqual({ valid: false, errors: [{ path, message }] });
    }
  });

  it('reports a missing field and a value that does not suit the operator together', () => {
    expect(validateCondition(accumulate({ function: 'avg', op: '>', value: [1, 2] }))).toEqual({
      valid: false,
      errors: [
        { path: 'root.field', message: 'function avg needs a field: the numeric fact field it aggregates' },
        { path: 'root.value', message: 'operator > takes a number: the aggregate is a number' },
      ],
    });
  });

  it('validates where recursively, with paths through it', () => {
    const dsl = {
      type: 'and',
      children: [failedLogin, accumulate({ function: 'count', where: { type: 'not', child: leaf('x', '=~', 1) } })],
    };
    const result = validateCondition(dsl);
    expect(result.valid).toBe(false);
    expect(result.errors).toEqual([{ path: 'root.children[1].where.child.op', message: expect.stringContaining('unknown operator "=~"') }]);
  });

  it('refuses accumulate inside any, all, or another accumulate', () => {
    const inner = accumulate({ function: 'count' });
    const message = 'accumulate cannot be used inside any, all or the where of another accumulate';
    expect(validateCondition({ type: 'any', field: 'items', condition: inner }).errors).toEqual([{ path: 'root.condition.type', message }]);
    expect(validateCondition({ type: 'all', field: 'items', condition: { type: 'not', child: inner } }).errors).toEqual([
      { path: 'root.condition.child.type', message },
    ]);
    expect(validateCondition(accumulate({ function: 'count', where: inner })).errors).toEqual([{ path: 'root.where.type', message }]);
  });

  it('refuses unknown and missing keys', () => {
    expect(validateCondition({ ...threeFailures, extra: 1 }).valid).toBe(false);
    const { op: _op, ...withoutOp } = threeFailures as Record<string, unknown>;
    expect(validateCondition(withoutOp).valid).toBe(false);
  });
});

describe('accumulate outside a session: the working memory is the one fact', () => {
  const fired = (condition: unknown, fact: unknown): boolean =>
    RuleEngine.compile([rule(1, condition)])
      .evaluate(fact)
      .fired_rules.includes(1);

  it('count is 1 when where holds (or there is no where), else 0', () => {
    expect(fired(accumulate({ function: 'count', where: failedLogin }), { type: 'login_failed' })).toBe(true);
    expect(fired(accumulate({ function: 'count', where: failedLogin }), { type: 'login' })).toBe(false);
    expect(fired(accumulate({ function: 'count', where: failedLogin, op: '==', value: 0 }), { type: 'login' })).toBe(true);
    expect(fired(accumulate({ function: 'count' }), {})).toBe(true);
    expect(fired(threeFailures, { type: 'login_failed' })).toBe(false);
  });

  it('count with a field counts the fact only when the field is present and not null', () => {
    expect(fired(accumulate({ function: 'count', field: 'email' }), { email: 'a@b' })).toBe(true);
    expect(fired(accumulate({ function: 'count', field: 'email' }), { email: null })).toBe(false);
    expect(fired(accumulate({ function: 'count', field: 'email', op: '==', value: 0 }), {})).toBe(true);
  });

  it('sum is the field when it is a number and where holds, else 0', () => {
    const bigSpend = accumulate({ function: 'sum', field: 'amount', op: '>', value: 5000 });
    expect(fired(bigSpend, { amount: 6000 })).toBe(true);
    expect(fired(bigSpend, { amount: 4000 })).toBe(false);
    expect(fired(bigSpend, { amount: '6000' })).toBe(false);
    expect(fired(accumulate({ function: 'sum', field: 'amount', op: '==', value: 0 }), { amount: 'x' })).toBe(true);
    expect(fired(accumulate({ function: 'sum', field: 'amount', where: failedLogin, op: '==', value: 0 }), { amount: 7 })).toBe(true);
  });

  it('avg, min and max are the field when it is a number, else null, and null compares false under every operator', () => {
    for (const fn of ['avg', 'min', 'max']) {
      expect(fired(accumulate({ function: fn, field: 'a', op: '==', value: 7 }), { a: 7 })).toBe(true);
      expect(fired(accumulate({ function: fn, field: 'a', op: '!=', value: 7 }), {})).toBe(false);
      expect(fired(accumulate({ function: fn, field: 'a', op: '<', value: 7 }), { a: 'x' })).toBe(false);
      expect(fired({ type: 'not', child: accumulate({ function: fn, field: 'a', op: '>', value: 0 }) }, {})).toBe(true);
    }
  });

  it('a fact that is not an object fires nothing, and a standalone compiled condition works too', () => {
    expect(fired(accumulate({ function: 'count', op: '==', value: 0 }), [1])).toBe(false);
    const test = compileCondition(accumulate({ function: 'sum', field: 'amount', op: '>=', value: 10 }) as ConditionNode);
    expect(test({ amount: 10 })).toBe(true);
    expect(test({ amount: 9 })).toBe(false);
  });
});

describe('accumulate with aggregates from a session', () => {
  const rules = [
    rule(1, threeFailures, { domain: 'auth' }),
    rule(
      2,
      { type: 'and', children: [leaf('type', '==', 'purchase'), accumulate({ function: 'sum', field: 'amount', op: '>', value: 5000 })] },
      {
        domain: 'shop',
        priority: 5,
      },
    ),
    rule(3, leaf('amount', '>', 100), { domain: 'shop' }),
    rule(4, accumulate({ function: 'max', field: 'amount' }), { domain: 'shop', enabled: false }),
  ];
  const engine = RuleEngine.compile(rules);

  it('lists the accumulators of enabled rules per domain with stable ids, function, window, field and where', () => {
    const auth = engine.accumulators('auth');
    expect(auth).toHaveLength(1);
    expect(auth[0]).toMatchObject({ ruleId: 1, fn: 'count', windowMs: 600_000, field: undefined });
    expect(auth[0]?.id).toMatch(/^r1:root:[0-9a-f]{8}$/);
    expect(auth[0]?.contribution({ type: 'login_failed' })).toBe(1);
    expect(auth[0]?.contribution({ type: 'login' })).toBeUndefined();
    const shop = engine.accumulators('shop');
    expect(shop.map((a) => [a.ruleId, a.fn, a.windowMs])).toEqual([[2, 'sum', undefined]]);
    expect(shop[0]?.id).toMatch(/^r2:root\.1:[0-9a-f]{8}$/);
    expect(shop[0]?.contribution({ amount: 12.5 })).toBe(12.5);
    expect(shop[0]?.contribution({ amount: '12' })).toBeUndefined();
    expect(engine.accumulators().map((a) => a.ruleId)).toEqual([2, 1]);
    expect(engine.accumulators('nowhere')).toEqual([]);
  });

  it('lists the accumulators of one rule, enabled or not, with the ids the domain list uses', () => {
    expect(engine.ruleAccumulators(2).map((a) => a.id)).toEqual(engine.accumulators('shop').map((a) => a.id));
    const disabled = engine.ruleAccumulators(4);
    expect(disabled.map((a) => [a.ruleId, a.fn])).toEqual([[4, 'max']]);
    expect(disabled[0]?.id).toMatch(/^r4:root:[0-9a-f]{8}$/);
    // The explanation reads a disabled rule's value under that id too.
    expect(engine.explain(4, {}, { aggregates: { [disabled[0]!.id]: 7 } })?.matched).toBe(true);
    expect(engine.ruleAccumulators(3)).toEqual([]);
    expect(engine.ruleAccumulators(99)).toEqual([]);
  });

  it('keeps ids across recompiles and changes them when the node changes', () => {
    const again = RuleEngine.compile(rules);
    expect(again.accumulators('auth')[0]?.id).toBe(engine.accumulators('auth')[0]?.id);
    const changed = RuleEngine.compile([rule(1, { ...threeFailures, value: 4 }, { domain: 'auth' })]);
    expect(changed.accumulators('auth')[0]?.id).not.toBe(engine.accumulators('auth')[0]?.id);
  });

  it('reads the aggregate from the map given to evaluate; ordinary conditions still look at the fact', () => {
    const [count] = engine.accumulators('auth');
    const [sum] = engine.accumulators('shop');
    expect(engine.evaluate({}, { domain: 'auth', aggregates: { [count!.id]: 3 } }).fired_rules).toEqual([1]);
    expect(engine.evaluate({ type: 'login_failed' }, { domain: 'auth', aggregates: { [count!.id]: 2 } }).fired_rules).toEqual([]);
    expect(engine.evaluate({ type: 'purchase', amount: 10 }, { domain: 'shop', aggregates: { [sum!.id]: 5001 } }).fired_rules).toEqual([2]);
    expect(engine.evaluate({ type: 'refund', amount: 200 }, { domain: 'shop', aggregates: { [sum!.id]: 9000 } }).fired_rules).toEqual([3]);
    expect(engine.evaluate({ type: 'purchase' }, { domain: 'shop', aggregates: { [sum!.id]: null } }).fired_rules).toEqual([]);
    // The map is not kept: the next evaluation without one is single-fact again.
    expect(engine.evaluate({ type: 'purchase', amount: 6000 }, { domain: 'shop' }).fired_rules).toEqual([2, 3]);
  });

  it('explains with the aggregate it compared', () => {
    const [count] = engine.accumulators('auth');
    const failed = engine.explain(1, { type: 'login_failed' }, { aggregates: { [count!.id]: 2 } });
    expect(failed?.failing_conditions).toEqual(['count(type == "login_failed") over 600s >= 3 (actual: 2)']);
    expect(failed?.explanation).toBe(`Rule 'r1' did not match: count(type == "login_failed") over 600s >= 3 failed (actual: 2).`);
    const held = engine.explain(1, {}, { aggregates: { [count!.id]: 3 } });
    expect(held?.matched).toBe(true);
    expect(held?.matching_conditions).toEqual(['count(type == "login_failed") over 600s >= 3 (actual: 3)']);
    expect(engine.explain(4, {})?.failing_conditions).toEqual(['max(amount) >= 1 (actual: null)']);
    expect(engine.explain(2, { type: 'purchase', amount: 6000 })?.matched).toBe(true);
  });

  it('renders every form', () => {
    const render = (fields: Record<string, unknown>) => renderCondition(accumulate(fields) as ConditionNode);
    expect(render({ function: 'count' })).toBe('count(*) >= 1');
    expect(render({ function: 'count', field: 'email' })).toBe('count(email) >= 1');
    expect(render({ function: 'sum', field: 'amount', where: failedLogin, window_seconds: 60, op: 'gt', value: 5 })).toBe(
      'sum(amount where type == "login_failed") over 60s > 5',
    );
    expect(render({ function: 'avg', field: 'a', op: 'between', value: [1, 2] })).toBe('avg(a) between [1, 2]');
  });
});

describe('accumulator ids', () => {
  // The node as written and as PostgreSQL's jsonb gives it back (keys shorter first, then by bytes).
  const written = {
    type: 'accumulate',
    function: 'count',
    where: { type: 'condition', field: 'type', op: '==', value: 'login_failed' },
    window_seconds: 600,
    op: '>=',
    value: 3,
  };
  const fromJsonb = {
    op: '>=',
    type: 'accumulate',
    value: 3,
    where: { op: '==', type: 'condition', field: 'type', value: 'login_failed' },
    function: 'count',
    window_seconds: 600,
  };

  it("do not depend on the order of a node's keys, and stay the ids sessions already hold", () => {
    const ids = [written, fromJsonb].map((node) => findAccumulateNodes(1, node as ConditionNode).map((found) => found.id));
    // Pinned: the id made from the node read back from jsonb before ids ignored key order.
    expect(ids).toEqual([['r1:root:7c4f6dad'], ['r1:root:7c4f6dad']]);
  });

  it('hash JSON with keys in jsonb order, multibyte keys by their UTF-8 bytes', () => {
    expect(jsonbOrderedJson(written)).toBe(JSON.stringify(fromJsonb));
    expect(jsonbOrderedJson({ é: 1, z: 2, aa: 3, b: [{ d: 1, c: undefined }] })).toBe('{"b":[{"d":1}],"z":2,"aa":3,"é":1}');
  });
});
