// The engine under test, through its public library API only.
import { DEFAULT_DOMAIN, type Rule } from '../../src/contracts/rule.ts';
import { compileCondition, RuleEngine } from '../../src/engine/index.ts';
import type { SyncEvaluate } from './fired-rules.ts';
import type { Fact } from './profile.ts';

export { compileCondition };

/** Compiles the rules with the indexed engine; each evaluation asks for one domain, as the service does. */
export function buildEngine(rules: readonly Rule[], domain: string = DEFAULT_DOMAIN): SyncEvaluate {
  const engine = RuleEngine.compile(rules);
  const options = { domain };
  return (fact: Fact) => engine.evaluate(fact, options);
}
