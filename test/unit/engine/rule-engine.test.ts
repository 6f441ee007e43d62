import { describe, expect, it } from 'vitest';
import type { ConditionNode } from '../../../src/contracts/condition-dsl.ts';
import type { RuleInput } from '../../../src/contracts/rule.ts';
import { EngineMetrics, RuleEngine } from '../../../src/engine/index.ts';
import { AppError } from '../../../src/errors.ts';

const leaf = (field: string, op: string, value: unknown) => ({ type: 'condition', field, op, value }) as ConditionNode;
const rule = (id: number, condition: ConditionNode, extra: Partial<RuleInput> = {}): RuleInput => ({
  id,
  name: `rule-${id}`,
  condition_dsl: condition,
  action: `action-${id}`,
  ...extra,
});

function fired(condition: ConditionNode, facts: unknown): boolean {
  return RuleEngine.compile([rule(1, condition)]).evaluate(facts).fired_rules.length === 1;
}

function compileError(rules: RuleInput[]): AppError {
  try {
    RuleEngine.compile(rules);
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
  throw new Error('compile did not throw');
}

describe('RuleEngine.compile', () => {
  it('applies the rule defaults: domain default, priority 0, enabled', () => {
    const engine = RuleEngine.compile([rule(7, leaf('a', '==', 1))]);
    expect(engine.getRule(7)).toMatchObject({ id: 7, domain: 'default', priority: 0, enabled: true });
    expect(engine.size).toBe(1);
    expect(engine.revision).toBe(0);
    expect(engine.rules().map((r) => r.id)).toEqual([7]);
    expect(engine.getRule(8)).toBeUndefined();
  });

  it('keeps the given revision and an empty rule set', () => {
    const engine = RuleEngine.compile([], { revision: 42 });
    expect(engine.revision).toBe(42);
    expect(engine.size).toBe(0);
    expect(engine.evaluate({ a: 1 })).toMatchObject({ fired_rules: [], actions: [] });
  });

  it('refuses invalid conditions with DSL_ERROR listing every problem of every rule', () => {
    const error = compileError([
      rule(1, leaf('a', 'zz', 1)),
      rule(2, leaf('a', '==', 1)),
      rule(3, { type: 'and', children: [leaf('b', 'between', [5, 1]), leaf('c', 'regex', '(a+)+')] } as ConditionNode),
    ]);
    expect(error.code).toBe('DSL_ERROR');
    expect(error.message).toMatch(/^rule 1: root\.op: unknown operator "zz": expected one of/);
    expect(error.message).toContain('; rule 3: root.children[0].value: operator between needs low <= high');
    expect(error.message).toContain('; rule 3: root.children[1].value: regular expression may backtrack catastrophically');
    expect(error.toBody().error_code).toBe('DSL_ERROR');
  });

  it('keeps a DSL_ERROR detail splittable on "; ", one problem a piece, whatever the regex problems say', () => {
    const long = `(?:${Array.from({ length: 90 }, (_, i) => `w${i}`).join('|')})`;
    const error = compileError([
      rule(1, leaf('a', 'regex', '(a+)+')),
      rule(2, { type: 'or', children: [leaf('b', 'regex', long), leaf('c', 'regex', '[')] } as ConditionNode),
    ]);
    const pieces = error.message.split('; ');
    expect(pieces).toHaveLength(3);
    for (const piece of pieces) expect(piece).toMatch(/^rule \d+: root(\.children\[\d\])?\.value: (invalid )?regular expression[ :]/);
  });

  it("compiles stored rules under the regex checks of their time, new ones under today's", () => {
    const lookahead = [rule(1, leaf('code', 'regex', '^(?=[A-Z])[A-Z0-9]+$'))];
    expect(compileError(lookahead).message).toContain('rule 1: root.value: regular expression cannot be bounded in time');
    expect(RuleEngine.compile(lookahead, { stored: true }).evaluate({ code: 'AB1' }).fired_rules).toEqual([1]);
  });

  it('finishes a regex that backtracks exponentially on a long input instead of blocking the process', () => {
    const engine = RuleEngine.compile([rule(1, leaf('email', 'regex', '^([a-z]|[a-z0-9])+@')), rule(2, leaf('n', 'regex', '(\\w|\\d)*$'))]);
    expect(engine.evaluate({ email: `${'a'.repeat(5_000)}!`, n: `${'1'.repeat(5_000)}!` }).fired_rules).toEqual([2]);
    expect(engine.evaluate({ email: `${'a'.repeat(5_000)}@x` }).fired_rules).toEqual([1]);
  });

  it('refuses duplicate ids with VALIDATION_ERROR', () => {
    const error = compileError([rule(1, leaf('a', '==', 1)), rule(1, leaf('b', '==', 1))]);
    expect(error.code).toBe('VALIDATION_ERROR');
    expect(error.message).toBe('duplicate rule id 1');
  });

  it('refuses malformed rule fields with VALIDATION_ERROR', () => {
    const bad = (fields: Record<string, unknown>) => compileError([{ ...rule(1, leaf('a', '==', 1)), ...fields } as RuleInput]).message;
    expect(bad({ id: 0 })).toBe('rules[0].id must be an integer from 1 to 2147483647');
    expect(bad({ id: 1.5 })).toBe('rules[0].id must be an integer from 1 to 2147483647');
    expect(bad({ id: 3_000_000_000 })).toBe('rules[0].id must be an integer from 1 to 2147483647');
    expect(RuleEngine.compile([rule(2_147_483_647, leaf('a', '==', 1))]).evaluate({ a: 1 }).fired_rules).toEqual([2_147_483_647]);
    expect(bad({ name: '' })).toBe('rule 1: name must be a non-empty string');
    expect(bad({ action: 3 })).toBe('rule 1: action must be a non-empty string');
    expect(bad({ domain: ' ' })).toBe('rule 1: domain must be a non-empty string');
    expect(bad({ priority: 'high' })).toBe('rule 1: priority must be an integer');
    expect(bad({ enabled: 'yes' })).toBe('rule 1: enabled must be a boolean');
    expect(compileError([null as unknown as RuleInput]).message).toBe('rules[0] must be an object');
    expect(compileError('nope' as unknown as RuleInput[]).message).toBe('rules must be an array');
  });

  it('keeps a frozen copy of each rule, so later changes to the input do not reach the engine', () => {
    const input = rule(1, { type: 'and', children: [leaf('a', 'in', [1, 2])] } as ConditionNode);
    const engine = RuleEngine.compile([input]);
    ((input.condition_dsl as { children: ConditionNode[] }).children[0] as { value: unknown[] }).value.push(3);
    expect(engine.evaluate({ a: 3 }).fired_rules).toEqual([]);
    expect(engine.getRule(1)?.condition_dsl).toEqual({ type: 'and', children: [leaf('a', 'in', [1, 2])] });
    expect(Object.isFrozen(engine.getRule(1))).toBe(true);
  });
});

describe('RuleEngine.evaluate', () => {
  it('orders fired rules by priority descending, then id ascending, with distinct actions in that order', () => {
    const always = { type: 'exists', field: 'a' } as ConditionNode;
    const engine = RuleEngine.compile([
      rule(5, always, { priority: 1, action: 'review' }),
      rule(2, always, { priority: 1, action: 'block' }),
      rule(9, always, { priority: 10, action: 'review' }),
      rule(1, always, { priority: -3, action: 'notify' }),
      rule(3, always, { priority: 1, action: 'block' }),
    ]);
    expect(engine.evaluate({ a: 1 })).toMatchObject({ fired_rules: [9, 2, 3, 5, 1], actions: ['review', 'block', 'notify'] });
  });

  it('orders many fired rules too (more than fit a small sort)', () => {
    const rules = Array.from({ length: 300 }, (_, index) => rule(300 - index, leaf('n', '>', index % 50), { priority: index % 3 }));
    const engine = RuleEngine.compile(rules);
    const { fired_rules } = engine.evaluate({ n: 1000 });
    const expected = [...rules].sort((a, b) => (b.priority ?? 0) - (a.priority ?? 0) || a.id - b.id).map((r) => r.id);
    expect(fired_rules).toEqual(expected);
  });

  it('considers only the given domain, or every domain when none is given', () => {
    const always = { type: 'exists', field: 'a' } as ConditionNode;
    const engine = RuleEngine.compile([rule(1, always, { domain: 'payments' }), rule(2, always, { domain: 'fraud' }), rule(3, always)]);
    expect(engine.evaluate({ a: 1 }).fired_rules).toEqual([1, 2, 3]);
    expect(engine.evaluate({ a: 1 }, { domain: 'fraud' }).fired_rules).toEqual([2]);
    expect(engine.evaluate({ a: 1 }, { domain: 'default' }).fired_rules).toEqual([3]);
    expect(engine.evaluate({ a: 1 }, { domain: 'unknown' }).fired_rules).toEqual([]);
    expect(engine.evaluate({ a: 1 }, {}).fired_rules).toEqual([1, 2, 3]);
  });

  it('never fires disabled rules but still knows them', () => {
    const engine = RuleEngine.compile([rule(1, leaf('a', '==', 1), { enabled: false }), rule(2, leaf('a', '==', 1))]);
    expect(engine.evaluate({ a: 1 }).fired_rules).toEqual([2]);
    expect(engine.getRule(1)?.enabled).toBe(false);
    expect(engine.size).toBe(2);
  });

  it('fires nothing for facts that are not objects, and never throws', () => {
    const engine = RuleEngine.compile([rule(1, { type: 'not', child: { type: 'exists', field: 'a' } } as ConditionNode)]);
    expect(engine.evaluate({}).fired_rules).toEqual([1]);
    for (const facts of [null, undefined, 5, 'text', [], [{ a: 1 }], true]) {
      expect(engine.evaluate(facts)).toMatchObject({ fired_rules: [], actions: [] });
    }
  });

  it('survives exotic facts: throwing getters, revoked proxies, cycles', () => {
    const engine = RuleEngine.compile([
      rule(1, leaf('a', '==', 1)),
      rule(2, leaf('b', '>', 0)),
      rule(3, { type: 'not', child: leaf('c', '==', 1) } as ConditionNode),
    ]);
    const throwing = Object.defineProperty({ b: 1 }, 'a', {
      enumerable: true,
      get() {
        throw new Error('boom');
      },
    });
    expect(engine.evaluate(throwing).fired_rules).toEqual([2, 3]);
    const revoked = Proxy.revocable({}, {});
    revoked.revoke();
    expect(engine.evaluate(revoked.proxy).fired_rules).toEqual([]);
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    expect(engine.evaluate(cyclic).fired_rules).toEqual([1, 3]);
    // The next ordinary fact is unaffected by the failed pass.
    expect(engine.evaluate({ a: 1, b: 1 }).fired_rules).toEqual([1, 2, 3]);
  });

  it('measures latency with the clock it is given', () => {
    let tick = 0;
    const engine = RuleEngine.compile([rule(1, leaf('a', '==', 1))], { now: () => (tick += 2.5) });
    expect(engine.evaluate({ a: 1 }).latency_ms).toBe(2.5);
    expect(RuleEngine.compile([]).evaluate({}).latency_ms).toBeGreaterThanOrEqual(0);
  });

  it('matches regex only on strings up to regexMaxInputLength', () => {
    const engine = RuleEngine.compile([rule(1, leaf('s', 'regex', 'b'))], { regexMaxInputLength: 5 });
    expect(engine.evaluate({ s: 'abc' }).fired_rules).toEqual([1]);
    expect(engine.evaluate({ s: 'aaaaab' }).fired_rules).toEqual([]);
  });

  it('indexes `or` branches and confirms the whole rule', () => {
    const engine = RuleEngine.compile([
      rule(1, {
        type: 'or',
        children: [leaf('country', '==', 'FR'), { type: 'and', children: [leaf('amount', '>', 10), leaf('amount', '<', 20)] }],
      } as ConditionNode),
      rule(2, {
        type: 'and',
        children: [leaf('k', '==', 1), { type: 'or', children: [leaf('x', 'in', [1, 2]), leaf('y', '==', 'z')] }],
      } as ConditionNode),
    ]);
    expect(engine.evaluate({ country: 'FR', amount: 15 }).fired_rules).toEqual([1]);
    expect(engine.evaluate({ amount: 15 }).fired_rules).toEqual([1]);
    expect(engine.evaluate({ amount: 25 }).fired_rules).toEqual([]);
    expect(engine.evaluate({ k: 1, y: 'z' }).fired_rules).toEqual([2]);
    expect(engine.evaluate({ k: 2, y: 'z' }).fired_rules).toEqual([]);
  });

  it('sorts rules sharing an equality gate by their first numeric bound, and fires exactly those the value satisfies', () => {
    const bounds: [string, unknown][] = [
      ['>', 10],
      ['>=', 10],
      ['<', 10],
      ['<=', 10],
      ['>', -5],
      ['<', 0],
      ['between', [5, 10]],
    ];
    // Rules 1..7: the bound alone after the gate; 11..17: a second, unindexed bound that must still be confirmed.
    const rules = bounds.flatMap(([op, value], index) => [
      rule(index + 1, { type: 'and', children: [leaf('m', '==', 'x'), leaf('amount', op, value)] } as ConditionNode),
      rule(index + 11, {
        type: 'and',
        children: [leaf('m', '==', 'x'), leaf('amount', op, value), leaf('score', '<', 3)],
      } as ConditionNode),
    ]);
    const engine = RuleEngine.compile(rules);
    const expected = (amount: unknown, score: unknown): number[] => {
      const holds = bounds.map(([op, value]) => {
        if (typeof amount !== 'number') return false;
        const bound = value as number;
        if (op === '>') return amount > bound;
        if (op === '>=') return amount >= bound;
        if (op === '<') return amount < bound;
        if (op === '<=') return amount <= bound;
        const [low, high] = value as [number, number];
        return amount >= low && amount <= high;
      });
      const ids = holds.flatMap((held, index) => (held ? [index + 1] : []));
      const confirmed = typeof score === 'number' && score < 3 ? holds.flatMap((held, index) => (held ? [index + 11] : [])) : [];
      return [...ids, ...confirmed];
    };
    for (const amount of [-10, -5, -0, 0, 4.9, 5, 9.99, 10, 10.01, Infinity, -Infinity, Number.NaN, '10', null, undefined]) {
      for (const score of [1, 3, undefined]) {
        const facts = { m: 'x', amount, score };
        expect(engine.evaluate(facts).fired_rules, `amount ${String(amount)}, score ${String(score)}`).toEqual(expected(amount, score));
        expect(engine.evaluate({ ...facts, m: 'y' }).fired_rules).toEqual([]);
      }
    }
  });

  it('never fires a rule gated by an empty `in` list', () => {
    expect(fired({ type: 'and', children: [leaf('a', 'in', []), leaf('b', '==', 1)] } as ConditionNode, { a: 1, b: 1 })).toBe(false);
  });

  it('handles rules whose `in` lists multiply beyond the indexed path limit', () => {
    const many = Array.from({ length: 40 }, (_, index) => index);
    const condition = { type: 'and', children: [leaf('a', 'in', many), leaf('b', 'in', many), leaf('c', '==', 'x')] } as ConditionNode;
    expect(fired(condition, { a: 39, b: 0, c: 'x' })).toBe(true);
    expect(fired(condition, { a: 39, b: 40, c: 'x' })).toBe(false);
  });
});

describe('DSL semantics', () => {
  it('missing fields make every comparison false, negative ones included', () => {
    for (const [op, value] of [
      ['==', 1],
      ['!=', 1],
      ['not_in', [1]],
      ['not_contains', 'x'],
      ['<', 5],
      ['between', [0, 9]],
    ] as const) {
      expect(fired(leaf('gone', op, value), { other: 1 })).toBe(false);
    }
    expect(fired({ type: 'not', child: { type: 'exists', field: 'gone' } } as ConditionNode, { other: 1 })).toBe(true);
  });

  it('never coerces between strings and numbers', () => {
    expect(fired(leaf('a', '==', 5), { a: '5' })).toBe(false);
    expect(fired(leaf('a', '>', 4), { a: '5' })).toBe(false);
    expect(fired(leaf('a', 'in', [5]), { a: '5' })).toBe(false);
    expect(fired(leaf('a', '!=', 5), { a: '5' })).toBe(true);
    expect(fired(leaf('a', '==', 5), { a: 5.0 })).toBe(true);
  });

  it('compares strings by code unit order', () => {
    expect(fired(leaf('a', '<', 'b'), { a: 'B' })).toBe(true);
    expect(fired(leaf('a', 'between', ['a', 'c']), { a: 'b' })).toBe(true);
    expect(fired(leaf('a', 'between', ['a', 'c']), { a: 'd' })).toBe(false);
  });

  it('== null holds only for a present null; exists needs a present non-null value', () => {
    expect(fired(leaf('a', '==', null), { a: null })).toBe(true);
    expect(fired(leaf('a', '==', null), {})).toBe(false);
    expect(fired({ type: 'exists', field: 'a' } as ConditionNode, { a: null })).toBe(false);
    expect(fired({ type: 'exists', field: 'a' } as ConditionNode, { a: false })).toBe(true);
  });

  it('equality works on booleans; NaN is never equal; objects never equal a scalar', () => {
    expect(fired(leaf('a', 'eq', true), { a: true })).toBe(true);
    expect(fired(leaf('a', '==', false), { a: 0 })).toBe(false);
    expect(fired(leaf('a', '!=', 1), { a: Number.NaN })).toBe(true);
    expect(fired(leaf('a', 'in', [1]), { a: Number.NaN })).toBe(false);
    expect(fired(leaf('a', '==', 1), { a: [1] })).toBe(false);
    expect(fired(leaf('a', '!=', 1), { a: { b: 1 } })).toBe(true);
  });

  it('in and not_in are false for object or array fact values', () => {
    expect(fired(leaf('a', 'in', [1]), { a: [1] })).toBe(false);
    expect(fired(leaf('a', 'not_in', [1]), { a: [2] })).toBe(false);
    expect(fired(leaf('a', 'not_in', [1]), { a: 2 })).toBe(true);
    expect(fired(leaf('a', 'not_in', [1]), { a: null })).toBe(true);
  });

  it('contains is membership on arrays and substring on strings, false otherwise', () => {
    expect(fired(leaf('tags', 'contains', 'vip'), { tags: ['new', 'vip'] })).toBe(true);
    expect(fired(leaf('tags', 'contains', 'vi'), { tags: ['vip'] })).toBe(false);
    expect(fired(leaf('name', 'contains', 'li'), { name: 'alice' })).toBe(true);
    expect(fired(leaf('n', 'contains', 1), { n: 1 })).toBe(false);
    expect(fired(leaf('n', 'not_contains', 1), { n: 1 })).toBe(false);
    expect(fired(leaf('tags', 'not_contains', 'vip'), { tags: ['new'] })).toBe(true);
    expect(fired(leaf('name', 'not_contains', 'bob'), { name: 'alice' })).toBe(true);
    expect(fired(leaf('name', 'contains', 5), { name: 'a5' })).toBe(false);
  });

  it('starts_with and ends_with work on strings only; regex searches unanchored', () => {
    expect(fired(leaf('s', 'starts_with', 'ab'), { s: 'abc' })).toBe(true);
    expect(fired(leaf('s', 'ends_with', 'bc'), { s: 'abc' })).toBe(true);
    expect(fired(leaf('s', 'starts_with', '1'), { s: 12 })).toBe(false);
    expect(fired(leaf('s', 'regex', 'b'), { s: 'abc' })).toBe(true);
    expect(fired(leaf('s', 'regex', '^b'), { s: 'abc' })).toBe(false);
    expect(fired(leaf('s', 'regex', '1'), { s: 1 })).toBe(false);
  });

  it('between is inclusive on both ends', () => {
    expect(fired(leaf('n', 'between', [1, 3]), { n: 1 })).toBe(true);
    expect(fired(leaf('n', 'between', [1, 3]), { n: 3 })).toBe(true);
    expect(fired(leaf('n', 'between', [1, 3]), { n: 3.01 })).toBe(false);
  });

  it('quantifiers: paths are relative to the element; all is vacuously true, any false, on []', () => {
    const any = { type: 'any', field: 'items', condition: leaf('sku', '==', 'A') } as ConditionNode;
    const all = { type: 'all', field: 'items', condition: leaf('qty', '>', 0) } as ConditionNode;
    expect(fired(any, { items: [{ sku: 'B' }, { sku: 'A' }] })).toBe(true);
    expect(fired(any, { items: [] })).toBe(false);
    expect(fired(all, { items: [] })).toBe(true);
    expect(fired(all, { items: [{ qty: 1 }, { qty: 0 }] })).toBe(false);
    for (const items of [undefined, 'A', { sku: 'A' }, null]) {
      expect(fired(any, { items })).toBe(false);
      expect(fired(all, { items })).toBe(false);
    }
    expect(fired(all, { items: [{ qty: 1 }, 5] })).toBe(false);
    expect(fired(any, { items: [5, { sku: 'A' }] })).toBe(true);
  });

  it('nested paths, array indexes, literal dotted keys and prototype keys', () => {
    expect(fired(leaf('user.profile.age', '>=', 18), { user: { profile: { age: 30 } } })).toBe(true);
    expect(fired(leaf('user.profile.age', '>=', 18), { 'user.profile.age': 30 })).toBe(true);
    expect(fired(leaf('items.0.sku', '==', 'A'), { items: [{ sku: 'A' }] })).toBe(true);
    expect(fired({ type: 'exists', field: 'constructor' } as ConditionNode, {})).toBe(false);
    expect(fired({ type: 'exists', field: '__proto__' } as ConditionNode, {})).toBe(false);
    expect(fired(leaf('toString', '==', 'x'), { toString: 'x' })).toBe(true);
  });
});

describe('EngineMetrics wiring', () => {
  it('rules out nothing, and counts every rule a candidate, when every rule fires', () => {
    const metrics = new EngineMetrics();
    const engine = RuleEngine.compile([rule(1, leaf('amount', '>', 0)), rule(2, leaf('country', '==', 'DE'))], { metrics });
    for (let i = 0; i < 10; i += 1) expect(engine.evaluate({ amount: 5, country: 'DE' }).fired_rules).toEqual([1, 2]);
    expect(metrics.snapshot()).toMatchObject({ candidates_per_fact_out: 2, alpha_prune_ratio: 0 });
  });

  it('reports no sharing average for an engine whose rules have no indexed test', () => {
    const metrics = new EngineMetrics();
    RuleEngine.compile([rule(1, { type: 'not', child: leaf('m', '==', 'zz') } as ConditionNode)], { metrics });
    expect(metrics.snapshot().linked_rules_avg).toBeNull();
  });

  it('records candidates, prune ratio, sharing and latency for every evaluation', () => {
    const metrics = new EngineMetrics();
    let tick = 0;
    const rules = [
      ...Array.from({ length: 8 }, (_, index) =>
        rule(index + 1, { type: 'and', children: [leaf('m', '==', `m${index}`), leaf('amount', '>', 10)] } as ConditionNode),
      ),
      rule(9, { type: 'and', children: [leaf('m', '==', 'm0'), leaf('amount', '<', 5)] } as ConditionNode),
      rule(10, { type: 'not', child: leaf('m', '==', 'zz') } as ConditionNode),
    ];
    const engine = RuleEngine.compile(rules, { metrics, now: () => (tick += 1) });
    engine.evaluate({ m: 'm0', amount: 50 });
    engine.evaluate({ m: 'none', amount: 50 });
    const snapshot = metrics.snapshot();
    expect(snapshot.evaluations).toBe(2);
    // Rule 10 (no gate) is a candidate on each fact. Fact 1 reaches m0's trie node, where rules 1 and 9 are sorted by
    // their amount bounds: 50 > 10 confirms rule 1 on the index alone (a candidate), and 50 < 5 rules out rule 9.
    expect(snapshot.candidates_per_fact_out).toBe(1.5);
    expect(snapshot.alpha_prune_ratio).toBeCloseTo(1 - 3 / 20);
    expect(snapshot.eval_latency_ms_p95).toBe(1);
    // Equality tests m0..m7: nine links over eight distinct tests.
    expect(snapshot.linked_rules_avg).toBeCloseTo(9 / 8);
  });
});
