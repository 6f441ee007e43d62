// json-rules-engine built from the same rules, answering in the engine's result shape.
import { Engine } from 'json-rules-engine';
import type { Rule } from '../../src/contracts/rule.ts';
import { walkPath } from './field-path.ts';
import { type AsyncEvaluate, activeRulesInOrder, type FiredRules } from './fired-rules.ts';
import { dslOperators, translateCondition } from './json-rules-engine-translation.ts';
import type { Fact } from './profile.ts';

export function buildJsonRulesEngine(rules: readonly Rule[], domain?: string): AsyncEvaluate {
  const ordered = activeRulesInOrder(rules, domain);
  const rank = new Map(ordered.map((rule, index) => [rule.id, index]));
  // allowUndefinedFacts: a field the fact lacks reads as undefined, which every DSL operator treats as false;
  // paths are walked with the DSL's own rules rather than JSONPath.
  const engine = new Engine([], { allowUndefinedFacts: true, pathResolver: walkPath });
  for (const operator of dslOperators()) engine.addOperator(operator);
  // Priority is left at json-rules-engine's default: it only orders execution, and results are ordered below.
  for (const rule of ordered) {
    engine.addRule({
      name: String(rule.id),
      conditions: translateCondition(rule.condition_dsl),
      event: { type: rule.action, params: { id: rule.id } },
    });
  }
  return async (fact: Fact): Promise<FiredRules> => {
    const { events } = await engine.run(fact);
    const fired = events.map((event) => event.params?.id as number).sort((a, b) => rank.get(a)! - rank.get(b)!);
    const actions = new Set<string>();
    for (const id of fired) actions.add(ordered[rank.get(id)!]!.action);
    return { fired_rules: fired, actions: [...actions] };
  };
}
