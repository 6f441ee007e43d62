// The result every contender returns, and the rule order the engine contract fixes for it.
import { DEFAULT_DOMAIN, type Rule } from '../../src/contracts/rule.ts';
import type { Fact } from './profile.ts';

export interface FiredRules {
  fired_rules: number[];
  actions: string[];
}

/** A contender under test: one evaluation of one fact. */
export type SyncEvaluate = (fact: Fact) => FiredRules;
export type AsyncEvaluate = (fact: Fact) => Promise<FiredRules>;

/** Enabled rules of one domain, priority descending then id ascending (the engine's fired_rules order). */
export function activeRulesInOrder(rules: readonly Rule[], domain: string = DEFAULT_DOMAIN): Rule[] {
  return rules.filter((rule) => rule.enabled && rule.domain === domain).sort((a, b) => b.priority - a.priority || a.id - b.id);
}
