// What every benchmark profile produces: rules for the engine and a pool of facts to evaluate.
import type { Rule } from '../../src/contracts/rule.ts';

/** A fact as the engine receives it once parsed. */
export type Fact = Record<string, unknown>;

export type ProfileName = 'selective' | 'adversarial' | 'grouped';

export interface Profile {
  name: ProfileName;
  rules: Rule[];
  facts: Fact[];
}

export interface ProfileOptions {
  ruleCount: number;
  factCount: number;
  seed: number;
}

/** Actions rules emit; few distinct ones, as in a real rule base. */
export const ACTIONS = [
  'review',
  'decline',
  'step_up_auth',
  'notify_risk',
  'hold_payout',
  'approve_fast',
  'tag_vip',
  'limit_velocity',
] as const;
