// The explain use case: why one stored rule did or did not match the given facts.
import type { Explanation } from '../contracts/evaluation.ts';
import type { RuleEngine } from '../engine/index.ts';
import { AppError } from '../errors.ts';
import type { Facts } from './evaluator.ts';

/** An explanation and the rules revision it was made at, so it can be matched with the results of that revision. */
export type RevisionExplanation = Explanation & { revision: number };

export function explainRule(catalog: { readonly engine: RuleEngine }, ruleId: number, facts: Facts): RevisionExplanation {
  // One engine for both: a reload between two reads would name a revision the explanation was not made at.
  const engine = catalog.engine;
  const explanation = engine.explain(ruleId, facts);
  if (explanation === undefined) throw new AppError('RULE_NOT_FOUND', `Rule ${ruleId} does not exist.`);
  return { ...explanation, revision: engine.revision };
}
