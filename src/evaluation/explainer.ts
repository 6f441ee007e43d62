// The explain use case: why one stored rule did or did not match the given facts.
import type { Explanation } from '../contracts/evaluation.ts';
import type { RuleEngine } from '../engine/index.ts';
import { AppError } from '../errors.ts';
import type { Facts } from './evaluator.ts';

export function explainRule(catalog: { readonly engine: RuleEngine }, ruleId: number, facts: Facts): Explanation {
  const explanation = catalog.engine.explain(ruleId, facts);
  if (explanation === undefined) throw new AppError('RULE_NOT_FOUND', `Rule ${ruleId} does not exist.`);
  return explanation;
}
