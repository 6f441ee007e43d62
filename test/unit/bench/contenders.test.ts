import { describe, expect, it } from 'vitest';
import { checkAgreement, DisagreementError } from '../../../bench/lib/agreement.ts';
import type { FiredRules } from '../../../bench/lib/fired-rules.ts';
import { buildNaiveLoop } from '../../../bench/lib/naive-loop.ts';
import type { Fact } from '../../../bench/lib/profile.ts';
import { referenceMatches } from '../../../bench/lib/reference-evaluator.ts';
import type { ConditionNode } from '../../../src/contracts/condition-dsl.ts';
import { DEFAULT_DOMAIN, type Rule } from '../../../src/contracts/rule.ts';

const above = (threshold: number): ConditionNode => ({ type: 'condition', field: 'amount', op: '>', value: threshold });

function rule(id: number, condition: ConditionNode, priority: number, action: string): Rule {
  return { id, name: `rule-${id}`, domain: DEFAULT_DOMAIN, condition_dsl: condition, action, priority, enabled: true };
}

const RULES: Rule[] = [
  rule(3, above(10), 0, 'review'),
  rule(1, above(100), 0, 'decline'),
  rule(2, above(10), 7, 'review'),
  rule(4, above(0), 7, 'notify'),
];
const reference = (dsl: ConditionNode) => (fact: Fact) => referenceMatches(dsl, fact);

describe('buildNaiveLoop', () => {
  it('fires matching rules by priority descending then id ascending, with distinct actions', () => {
    const evaluate = buildNaiveLoop(RULES, reference);
    expect(evaluate({ amount: 50 })).toEqual({ fired_rules: [2, 4, 3], actions: ['review', 'notify'] });
    expect(evaluate({ amount: 500 })).toEqual({ fired_rules: [2, 4, 1, 3], actions: ['review', 'notify', 'decline'] });
    expect(evaluate({})).toEqual({ fired_rules: [], actions: [] });
  });

  it('tries only enabled rules of the requested domain', () => {
    const rules = [...RULES, { ...rule(9, above(0), 9, 'other'), domain: 'payments' }, { ...rule(8, above(0), 9, 'off'), enabled: false }];
    expect(buildNaiveLoop(rules, reference)({ amount: 5 }).fired_rules).toEqual([4]);
    expect(buildNaiveLoop(rules, reference, 'payments')({ amount: 5 }).fired_rules).toEqual([9]);
  });
});

describe('checkAgreement', () => {
  const facts: Fact[] = [{ amount: 5 }, { amount: 50 }, { amount: 500 }];
  const baseline = { name: 'naive', evaluate: buildNaiveLoop(RULES, reference), factIndexes: [0, 1, 2] };

  it('accepts contenders that fire the same rules, sync or async', async () => {
    const asyncPeer = { name: 'async', evaluate: async (fact: Fact) => baseline.evaluate(fact), factIndexes: [2] };
    await expect(checkAgreement(facts, baseline, [asyncPeer])).resolves.toBeUndefined();
  });

  it('names the contender, the fact and both answers on a mismatch', async () => {
    const wrong = {
      name: 'broken',
      evaluate: (fact: Fact): FiredRules =>
        fact.amount === 50 ? { fired_rules: [4, 2, 3], actions: ['notify', 'review'] } : baseline.evaluate(fact),
      factIndexes: [0, 1, 2],
    };
    const check = checkAgreement(facts, baseline, [wrong]);
    await expect(check).rejects.toBeInstanceOf(DisagreementError);
    await expect(checkAgreement(facts, baseline, [wrong])).rejects.toThrow(
      'broken disagrees with naive on fact #1 {"amount":50}: naive fired [2, 4, 3] with actions [review, notify], broken fired [4, 2, 3] with actions [notify, review]',
    );
  });

  it('refuses to check a contender on facts the baseline did not see', async () => {
    const peer = { name: 'peer', evaluate: baseline.evaluate, factIndexes: [2] };
    await expect(checkAgreement(facts, { ...baseline, factIndexes: [0] }, [peer])).rejects.toThrow(
      'peer is checked on fact #2, which naive was not run on',
    );
  });
});
