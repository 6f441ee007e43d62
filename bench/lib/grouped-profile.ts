// Grouped profile: few distinct equality gates (country, channel), each shared by many rules that differ only in thresholds.
import { DEFAULT_DOMAIN, type Rule } from '../../src/contracts/rule.ts';
import { and, leaf } from './dsl.ts';
import { AMOUNT_MAX, CHANNELS, COUNTRIES, generateFacts } from './fact-generator.ts';
import { cents, mulberry32, pick, randomInt } from './prng.ts';
import { ACTIONS, type Profile, type ProfileOptions } from './profile.ts';
import { selectiveIdSpaces } from './selective-profile.ts';

/** Amount thresholds sit in the top fifth of amounts, so a few percent of the rules behind a gate fire. */
export const AMOUNT_THRESHOLD_FLOOR = 0.8;
/** Account-age limits are days, against accounts up to ten years old: the young-account rules rarely hold. */
export const YOUNG_ACCOUNT_MAX_DAYS = 60;

export function groupedProfile(options: ProfileOptions): Profile {
  const random = mulberry32(options.seed);
  const rules: Rule[] = [];
  for (let id = 1; id <= options.ruleCount; id++) {
    const amount = cents((AMOUNT_THRESHOLD_FLOOR + random() * (1 - AMOUNT_THRESHOLD_FLOOR)) * AMOUNT_MAX);
    const condition_dsl =
      id % 2 === 1
        ? and(leaf('country', '==', pick(random, COUNTRIES)), leaf('amount', '>', amount))
        : and(
            leaf('channel', '==', pick(random, CHANNELS)),
            leaf('account_age_days', '<', randomInt(random, 1, YOUNG_ACCOUNT_MAX_DAYS)),
            leaf('amount', '>=', amount),
          );
    rules.push({
      id,
      name: `grouped-${id}`,
      condition_dsl,
      action: pick(random, ACTIONS),
      priority: randomInt(random, 0, 9),
      domain: DEFAULT_DOMAIN,
      enabled: true,
    });
  }
  // The same fact shape as the other profiles, so the JSON.parse floor parses comparable documents.
  return { name: 'grouped', rules, facts: generateFacts(options.factCount, selectiveIdSpaces(options.ruleCount), options.seed ^ 0x5eed) };
}
