// Adversarial profile: every rule tests the same hot numeric fields with random thresholds, so no gate can prune.
import { DEFAULT_DOMAIN, type Rule } from '../../src/contracts/rule.ts';
import { and, leaf } from './dsl.ts';
import { AMOUNT_MAX, generateFacts } from './fact-generator.ts';
import { cents, mulberry32, pick, randomInt } from './prng.ts';
import { ACTIONS, type Profile, type ProfileOptions } from './profile.ts';
import { selectiveIdSpaces } from './selective-profile.ts';

/** Score thresholds stay low so a few percent of rules fire per fact, not a quarter of them. */
export const SCORE_THRESHOLD_MAX = 0.3;

export function adversarialProfile(options: ProfileOptions): Profile {
  const random = mulberry32(options.seed);
  const rules: Rule[] = [];
  for (let id = 1; id <= options.ruleCount; id++) {
    rules.push({
      id,
      name: `adversarial-${id}`,
      condition_dsl: and(
        leaf('amount', '>', cents(random() * AMOUNT_MAX)),
        leaf('score', '<', Math.round(random() * SCORE_THRESHOLD_MAX * 1_000) / 1_000),
      ),
      action: pick(random, ACTIONS),
      priority: randomInt(random, 0, 9),
      domain: DEFAULT_DOMAIN,
      enabled: true,
    });
  }
  // The same fact shape as the selective profile, so the JSON.parse floor parses comparable documents.
  return {
    name: 'adversarial',
    rules,
    facts: generateFacts(options.factCount, selectiveIdSpaces(options.ruleCount), options.seed ^ 0x5eed),
  };
}
