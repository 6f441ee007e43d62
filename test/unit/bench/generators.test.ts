import { describe, expect, it } from 'vitest';
import { adversarialProfile } from '../../../bench/lib/adversarial-profile.ts';
import { CHANNELS, COUNTRIES, MISSING_SHARE } from '../../../bench/lib/fact-generator.ts';
import { groupedProfile } from '../../../bench/lib/grouped-profile.ts';
import { cents, mulberry32, pick, pickDistinct, randomInt } from '../../../bench/lib/prng.ts';
import { referenceMatches } from '../../../bench/lib/reference-evaluator.ts';
import { selectiveIdSpaces, selectiveProfile } from '../../../bench/lib/selective-profile.ts';
import { ruleSchema } from '../../../src/contracts/rule.ts';
import { RuleEngine } from '../../../src/engine/index.ts';

describe('mulberry32', () => {
  it('produces the reference mulberry32 sequence for a seed', () => {
    const random = mulberry32(42);
    expect([random(), random(), random()]).toEqual([0.6011037519201636, 0.44829055899754167, 0.8524657934904099]);
  });

  it('repeats for the same seed and differs for another', () => {
    const a = mulberry32(7);
    const b = mulberry32(7);
    const c = mulberry32(8);
    const first = Array.from({ length: 5 }, () => a());
    expect(Array.from({ length: 5 }, () => b())).toEqual(first);
    expect(Array.from({ length: 5 }, () => c())).not.toEqual(first);
  });

  it('stays in [0, 1)', () => {
    const random = mulberry32(1);
    for (let i = 0; i < 10_000; i++) {
      const value = random();
      expect(value >= 0 && value < 1).toBe(true);
    }
  });
});

describe('random helpers', () => {
  it('randomInt covers both bounds and nothing outside', () => {
    const random = mulberry32(3);
    const seen = new Set(Array.from({ length: 1_000 }, () => randomInt(random, 2, 4)));
    expect([...seen].sort()).toEqual([2, 3, 4]);
  });

  it('pickDistinct returns distinct items and refuses more than there are', () => {
    const random = mulberry32(3);
    const chosen = pickDistinct(random, ['a', 'b', 'c'], 3);
    expect(chosen.sort()).toEqual(['a', 'b', 'c']);
    expect(() => pickDistinct(random, ['a', 'b'], 3)).toThrow('cannot pick 3 distinct items from 2');
  });

  it('pick refuses an empty list', () => {
    expect(() => pick(mulberry32(1), [])).toThrow('pick needs a non-empty list');
  });

  it('cents rounds to two decimals', () => {
    expect(cents(12.3456)).toBe(12.35);
  });
});

describe('selectiveProfile', () => {
  const options = { ruleCount: 2_000, factCount: 300, seed: 11 };

  it('is deterministic for a seed', () => {
    expect(selectiveProfile(options)).toEqual(selectiveProfile(options));
    expect(selectiveProfile({ ...options, seed: 12 })).not.toEqual(selectiveProfile(options));
  });

  it('makes rules the rule schema accepts, with ids 1..n', () => {
    const { rules } = selectiveProfile(options);
    expect(rules.map((rule) => rule.id)).toEqual(Array.from({ length: 2_000 }, (_, index) => index + 1));
    for (const rule of rules) expect(ruleSchema.safeParse(rule).success).toBe(true);
  });

  it('gates every rule on an equality of a high-cardinality field followed by 1–3 further tests', () => {
    for (const rule of selectiveProfile(options).rules) {
      const dsl = rule.condition_dsl;
      if (dsl.type !== 'and') throw new Error(`rule ${rule.id} is not an and`);
      const [gate, ...rest] = dsl.children;
      expect(gate).toMatchObject({ type: 'condition', op: '==' });
      const field = gate?.type === 'condition' ? gate.field : '';
      expect(['merchant', 'mcc']).toContain(field);
      expect(rest.length).toBeGreaterThanOrEqual(1);
      expect(rest.length).toBeLessThanOrEqual(3);
    }
  });

  it('keeps the candidates per fact to a handful at any size by growing the id spaces', () => {
    expect(selectiveIdSpaces(100_000)).toEqual({ merchants: 18_750, mccs: 4_167 });
    expect(selectiveIdSpaces(1_000)).toEqual({ merchants: 188, mccs: 42 });
  });

  it('draws facts from the rules id space, so rules fire on most facts', () => {
    const { rules, facts } = selectiveProfile(options);
    const firing = facts.filter((fact) => rules.some((rule) => referenceMatches(rule.condition_dsl, fact)));
    expect(firing.length / facts.length).toBeGreaterThan(0.5);
  });

  it('leaves score or tags out of some facts, so missing fields are exercised', () => {
    const { facts } = selectiveProfile(options);
    const withoutScore = facts.filter((fact) => !('score' in fact)).length / facts.length;
    expect(withoutScore).toBeGreaterThan(MISSING_SHARE / 2);
    expect(withoutScore).toBeLessThan(MISSING_SHARE * 2);
    expect(facts.some((fact) => !('tags' in fact))).toBe(true);
  });
});

describe('adversarialProfile', () => {
  const options = { ruleCount: 500, factCount: 200, seed: 5 };

  it('is deterministic for a seed', () => {
    expect(adversarialProfile(options)).toEqual(adversarialProfile(options));
    expect(adversarialProfile({ ...options, seed: 6 })).not.toEqual(adversarialProfile(options));
  });

  it('tests the same hot numeric fields in every rule, with no equality gate', () => {
    for (const rule of adversarialProfile(options).rules) {
      expect(ruleSchema.safeParse(rule).success).toBe(true);
      expect(rule.condition_dsl).toMatchObject({
        type: 'and',
        children: [
          { type: 'condition', field: 'amount', op: '>' },
          { type: 'condition', field: 'score', op: '<' },
        ],
      });
    }
  });

  it('has thresholds that vary from rule to rule', () => {
    const thresholds = new Set(
      adversarialProfile(options).rules.map((rule) =>
        rule.condition_dsl.type === 'and' ? JSON.stringify(rule.condition_dsl.children) : '',
      ),
    );
    expect(thresholds.size).toBe(500);
  });
});

describe('groupedProfile', () => {
  const options = { ruleCount: 500, factCount: 200, seed: 5 };

  it('is deterministic for a seed', () => {
    expect(groupedProfile(options)).toEqual(groupedProfile(options));
    expect(groupedProfile({ ...options, seed: 6 })).not.toEqual(groupedProfile(options));
  });

  it('gates every rule by country or channel, shared by many rules, ahead of thresholds', () => {
    const gates = new Map<string, number>();
    for (const rule of groupedProfile(options).rules) {
      expect(ruleSchema.safeParse(rule).success).toBe(true);
      const condition = rule.condition_dsl;
      if (condition.type !== 'and') throw new Error('expected an and');
      const [gate, ...thresholds] = condition.children;
      if (gate?.type !== 'condition') throw new Error('expected a comparison first');
      expect(['country', 'channel']).toContain(gate.field);
      expect(gate.op).toBe('==');
      expect(thresholds.map((child) => (child.type === 'condition' ? child.op : child.type))).toEqual(
        gate.field === 'country' ? ['>'] : ['<', '>='],
      );
      const key = `${gate.field}=${String(gate.value)}`;
      gates.set(key, (gates.get(key) ?? 0) + 1);
    }
    expect(gates.size).toBeLessThanOrEqual(COUNTRIES.length + CHANNELS.length);
    expect(Math.min(...gates.values())).toBeGreaterThan(5);
  });

  it('fires a few rules per fact, not most of them', () => {
    const { rules, facts } = groupedProfile(options);
    const engine = RuleEngine.compile(rules);
    const fired = facts.reduce((sum, fact) => sum + engine.evaluate(fact).fired_rules.length, 0) / facts.length;
    expect(fired).toBeGreaterThan(0.2);
    expect(fired).toBeLessThan(rules.length * 0.05);
  });
});
