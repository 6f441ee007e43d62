// Payment facts shared by both profiles; high-cardinality ids come from the same space the rules use, so rules fire.

import { cents, mulberry32, pick, pickDistinct, type Random, randomInt } from './prng.ts';
import type { Fact } from './profile.ts';

export const COUNTRIES = [
  'FR',
  'DE',
  'ES',
  'IT',
  'NL',
  'BE',
  'PT',
  'PL',
  'SE',
  'DK',
  'FI',
  'IE',
  'AT',
  'CH',
  'GB',
  'US',
  'CA',
  'BR',
  'JP',
  'AU',
] as const;
export const CURRENCIES = ['EUR', 'USD', 'GBP', 'CHF', 'JPY'] as const;
export const CHANNELS = ['web', 'app', 'pos', 'moto'] as const;
export const TAGS = ['vip', 'new_device', 'returning', 'promo', 'gift_card', 'high_risk_ip'] as const;

export const AMOUNT_MAX = 5_000;
export const ACCOUNT_AGE_MAX_DAYS = 3_650;
/** Share of facts without a score or without tags, so missing-field semantics are exercised on every run. */
export const MISSING_SHARE = 0.1;

/** The id spaces a fact draws from; the rule generators size them by rule count. */
export interface IdSpaces {
  merchants: number;
  mccs: number;
}

export function merchantId(index: number): string {
  return `m${index}`;
}

export function mccCode(index: number): string {
  return String(1_000 + index);
}

export function generateFacts(count: number, spaces: IdSpaces, seed: number): Fact[] {
  const random = mulberry32(seed);
  return Array.from({ length: count }, (_, index) => generateFact(random, spaces, index));
}

function generateFact(random: Random, spaces: IdSpaces, index: number): Fact {
  const fact: Fact = {
    transaction_id: `t${index}`,
    merchant: merchantId(randomInt(random, 0, spaces.merchants - 1)),
    mcc: mccCode(randomInt(random, 0, spaces.mccs - 1)),
    country: pick(random, COUNTRIES),
    currency: pick(random, CURRENCIES),
    channel: pick(random, CHANNELS),
    amount: cents(random() * AMOUNT_MAX),
    account_age_days: randomInt(random, 0, ACCOUNT_AGE_MAX_DAYS),
  };
  if (random() >= MISSING_SHARE) fact.score = Math.round(random() * 1_000) / 1_000;
  if (random() >= MISSING_SHARE) fact.tags = pickDistinct(random, TAGS, randomInt(random, 0, 3));
  return fact;
}
