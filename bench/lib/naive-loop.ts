// The naive peer: one compiled closure per rule, every rule of the domain tried on every fact.
import type { ConditionNode } from '../../src/contracts/condition-dsl.ts';
import type { Rule } from '../../src/contracts/rule.ts';
import { activeRulesInOrder, type FiredRules, type SyncEvaluate } from './fired-rules.ts';
import type { Fact } from './profile.ts';

export type CompileCondition = (dsl: ConditionNode) => (fact: Fact) => boolean;

export function buildNaiveLoop(rules: readonly Rule[], compile: CompileCondition, domain?: string): SyncEvaluate {
  // Sorted once here so each evaluation emits fired rules already in contract order.
  const ordered = activeRulesInOrder(rules, domain);
  const tests = ordered.map((rule) => compile(rule.condition_dsl));
  const ids = ordered.map((rule) => rule.id);
  const actions = ordered.map((rule) => rule.action);
  return (fact: Fact): FiredRules => {
    const fired: number[] = [];
    const seen = new Set<string>();
    for (let index = 0; index < tests.length; index++) {
      if (tests[index]!(fact)) {
        fired.push(ids[index]!);
        seen.add(actions[index]!);
      }
    }
    return { fired_rules: fired, actions: [...seen] };
  };
}
