// Selective profile: every rule is gated by an equality on a high-cardinality field, like a real rule base.
import type { ConditionNode } from '../../src/contracts/condition-dsl.ts';
import { DEFAULT_DOMAIN, type Rule } from '../../src/contracts/rule.ts';
import { and, leaf } from './dsl.ts';
import {
  ACCOUNT_AGE_MAX_DAYS,
  AMOUNT_MAX,
  CHANNELS,
  COUNTRIES,
  CURRENCIES,
  generateFacts,
  type IdSpaces,
  mccCode,
  merchantId,
  TAGS,
} from './fact-generator.ts';
import { cents, mulberry32, pick, pickDistinct, type Random, randomInt } from './prng.ts';
import { ACTIONS, type Profile, type ProfileOptions } from './profile.ts';

/** Share of rules gated on merchant; the rest are gated on mcc plus a country list. */
export const MERCHANT_GATED_SHARE = 0.75;
/** Rules per merchant and per mcc code: the id spaces grow with the rule count, so candidates per fact stay a handful. */
export const RULES_PER_MERCHANT = 4;
export const RULES_PER_MCC = 6;
const MAX_MCCS = 8_999;

export function selectiveIdSpaces(ruleCount: number): IdSpaces {
  return {
    merchants: Math.max(10, Math.round((ruleCount * MERCHANT_GATED_SHARE) / RULES_PER_MERCHANT)),
    mccs: Math.min(MAX_MCCS, Math.max(10, Math.round((ruleCount * (1 - MERCHANT_GATED_SHARE)) / RULES_PER_MCC))),
  };
}

export function selectiveProfile(options: ProfileOptions): Profile {
  const spaces = selectiveIdSpaces(options.ruleCount);
  const random = mulberry32(options.seed);
  const rules: Rule[] = [];
  for (let id = 1; id <= options.ruleCount; id++) {
    const merchantGated = random() < MERCHANT_GATED_SHARE;
    const gate = merchantGated
      ? [leaf('merchant', '==', merchantId(randomInt(random, 0, spaces.merchants - 1)))]
      : [leaf('mcc', '==', mccCode(randomInt(random, 0, spaces.mccs - 1))), leaf('country', 'in', pickDistinct(random, COUNTRIES, 3))];
    const extraCount = merchantGated ? randomInt(random, 1, 3) : randomInt(random, 0, 2);
    const extras = pickDistinct(random, EXTRA_TESTS, extraCount).map((make) => make(random));
    rules.push({
      id,
      name: `selective-${id}`,
      condition_dsl: and(...gate, ...extras),
      action: pick(random, ACTIONS),
      priority: randomInt(random, 0, 9),
      domain: DEFAULT_DOMAIN,
      enabled: true,
    });
  }
  return { name: 'selective', rules, facts: generateFacts(options.factCount, spaces, options.seed ^ 0x5eed) };
}

/** Range, inequality and contains tests that follow the gate; each holds for roughly half to three quarters of facts. */
const EXTRA_TESTS: ReadonlyArray<(random: Random) => ConditionNode> = [
  (random) => leaf('amount', pick(random, ['>', 'gt'] as const), cents(random() * AMOUNT_MAX * 0.6)),
  (random) => {
    const low = cents(random() * AMOUNT_MAX * 0.6);
    return leaf('amount', 'between', [low, cents(low + AMOUNT_MAX * (0.2 + random() * 0.4))]);
  },
  (random) => leaf('score', pick(random, ['<', 'lt'] as const), Math.round((0.3 + random() * 0.6) * 1_000) / 1_000),
  (random) => leaf('score', '>=', Math.round(random() * 0.5 * 1_000) / 1_000),
  (random) => leaf('account_age_days', '<=', randomInt(random, 30, ACCOUNT_AGE_MAX_DAYS)),
  (random) => leaf('channel', pick(random, ['!=', 'ne'] as const), pick(random, CHANNELS)),
  (random) => leaf('currency', '!=', pick(random, CURRENCIES)),
  (random) => leaf('tags', 'contains', pick(random, TAGS)),
  (random) => leaf('country', 'not_in', pickDistinct(random, COUNTRIES, 2)),
];
