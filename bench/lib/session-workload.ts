// The sessions benchmark's workload: one domain's rules (some of them accumulate), payment events and the fact ids they are added under.
import type { AccumulateNode, ConditionNode } from '../../src/contracts/condition-dsl.ts';
import type { StoredRule } from '../../src/store/types.ts';
import { and, leaf } from './dsl.ts';
import { cents, pick, pickDistinct, type Random, randomInt } from './prng.ts';

export const SESSION_DOMAIN = 'payments';

const EVENT_TYPES = ['purchase', 'purchase', 'purchase', 'purchase', 'login', 'login_failed', 'refund', 'transfer'] as const;
const COUNTRIES = ['DE', 'FR', 'US', 'GB', 'NL', 'ES', 'IT', 'PL', 'CA', 'BR'] as const;
const CURRENCIES = ['EUR', 'USD', 'GBP', 'PLN'] as const;
const CHANNELS = ['web', 'app', 'pos', 'api'] as const;
const TIERS = ['basic', 'silver', 'gold', 'platinum'] as const;
const WINDOWS = [300, 600, 1_800, 3_600, 86_400] as const;
const FUNCTIONS = ['count', 'sum', 'avg', 'min', 'max'] as const;

/** One payment-domain event; `timestamp` is ISO 8601, as a producer would send it. A type alias, so it is assignable to Facts. */
export type SessionEvent = {
  type: string;
  amount: number;
  currency: string;
  country: string;
  channel: string;
  customer: { id: string; tier: string; age: number };
  timestamp: string;
};

/** The accumulate node of the i-th accumulate rule: the functions take turns, and count always has where and a window. */
export function accumulateNode(index: number, random: Random): AccumulateNode {
  const fn = FUNCTIONS[index % FUNCTIONS.length]!;
  switch (fn) {
    case 'count':
      return {
        type: 'accumulate',
        function: 'count',
        where: leaf('type', '==', pick(random, ['login_failed', 'refund', 'transfer', 'purchase'])),
        window_seconds: pick(random, [300, 600, 1_800]),
        op: '>=',
        value: randomInt(random, 3, 40),
      };
    case 'sum':
      return {
        type: 'accumulate',
        function: 'sum',
        field: 'amount',
        where: leaf('type', '==', 'purchase'),
        window_seconds: pick(random, [3_600, 86_400]),
        op: '>',
        value: randomInt(random, 10, 400) * 1_000,
      };
    case 'avg':
      return {
        type: 'accumulate',
        function: 'avg',
        field: 'amount',
        where: leaf('channel', '==', pick(random, CHANNELS)),
        op: '>',
        value: randomInt(random, 500, 3_000),
      };
    case 'min':
      return {
        type: 'accumulate',
        function: 'min',
        field: 'amount',
        window_seconds: pick(random, WINDOWS),
        op: '<',
        value: randomInt(random, 5, 200),
      };
    case 'max':
      return {
        type: 'accumulate',
        function: 'max',
        field: 'amount',
        where: leaf('country', 'in', pickDistinct(random, COUNTRIES, 3)),
        window_seconds: pick(random, WINDOWS),
        op: '>=',
        value: randomInt(random, 3_000, 5_000),
      };
  }
}

/** An ordinary condition over the event's fields: two or three tests under `and`, some of them an `or` or a `not`. */
function ordinaryCondition(random: Random): ConditionNode {
  const tests: ConditionNode[] = [];
  const count = randomInt(random, 2, 3);
  const fields = pickDistinct(random, ['type', 'amount', 'country', 'currency', 'channel', 'tier', 'age'], count);
  for (const field of fields) {
    switch (field) {
      case 'type':
        tests.push(leaf('type', '==', pick(random, EVENT_TYPES)));
        break;
      case 'amount':
        tests.push(leaf('amount', '>', randomInt(random, 100, 4_900)));
        break;
      case 'country':
        tests.push(leaf('country', 'in', pickDistinct(random, COUNTRIES, randomInt(random, 1, 4))));
        break;
      case 'currency':
        tests.push(leaf('currency', '==', pick(random, CURRENCIES)));
        break;
      case 'channel':
        tests.push({ type: 'not', child: leaf('channel', '==', pick(random, CHANNELS)) });
        break;
      case 'tier':
        tests.push({ type: 'or', children: [leaf('customer.tier', '==', pick(random, TIERS)), leaf('customer.age', '<', 25)] });
        break;
      default:
        tests.push(leaf('customer.age', 'between', [randomInt(random, 18, 40), randomInt(random, 41, 90)]));
    }
  }
  return and(...tests);
}

/**
 * `total` enabled rules of SESSION_DOMAIN, the first `accumulates` of them with one accumulate node each (half alone, half
 * behind an ordinary test as fast rules are written), the rest ordinary conditions. Ids run from 1.
 */
export function sessionRules(total: number, accumulates: number, random: Random): StoredRule[] {
  if (!Number.isInteger(total) || total < 1) throw new RangeError(`total must be a positive integer, got ${total}`);
  if (!Number.isInteger(accumulates) || accumulates < 0 || accumulates > total) {
    throw new RangeError(`accumulates must be an integer from 0 to ${total}, got ${accumulates}`);
  }
  const at = new Date(0).toISOString();
  return Array.from({ length: total }, (_, index): StoredRule => {
    let condition: ConditionNode;
    if (index < accumulates) {
      const node = accumulateNode(index, random);
      condition = index % 2 === 0 ? node : and(leaf('type', '==', pick(random, EVENT_TYPES)), node);
    } else {
      condition = ordinaryCondition(random);
    }
    return {
      id: index + 1,
      name: `${index < accumulates ? 'aggregate' : 'rule'} ${index + 1}`,
      domain: SESSION_DOMAIN,
      condition_dsl: condition,
      action: `action_${index % 10}`,
      priority: randomInt(random, 0, 9),
      enabled: true,
      version: 1,
      created_at: at,
      updated_at: at,
    };
  });
}

/** A payment event of one customer at `eventTimeMs`. */
export function sessionEvent(random: Random, customerId: string, eventTimeMs: number): SessionEvent {
  return {
    type: pick(random, EVENT_TYPES),
    amount: cents(1 + random() * 4_999),
    currency: pick(random, CURRENCIES),
    country: pick(random, COUNTRIES),
    channel: pick(random, CHANNELS),
    customer: { id: customerId, tier: pick(random, TIERS), age: randomInt(random, 18, 90) },
    timestamp: new Date(eventTimeMs).toISOString(),
  };
}

/** Event time as a producer stamps it: mostly up to 2 s before arrival, 2% arrive late by up to 10 minutes. */
export function eventTime(random: Random, nowMs: number): number {
  const delay = random() < 0.02 ? randomInt(random, 2_000, 600_000) : randomInt(random, 0, 2_000);
  return nowMs - delay;
}

/**
 * The fact ids of one session: the preload adds `f-0` to `f-<preloaded - 1>`; afterwards a `replaceShare` of the adds
 * reuse one of the latest 1,000 ids (a corrected event), the rest take the next new id.
 */
export class FactIds {
  readonly #random: Random;
  readonly #replaceShare: number;
  #next: number;

  constructor(random: Random, preloaded: number, replaceShare: number) {
    if (!(replaceShare >= 0 && replaceShare <= 1)) throw new RangeError(`replaceShare must be within [0, 1], got ${replaceShare}`);
    this.#random = random;
    this.#replaceShare = replaceShare;
    this.#next = preloaded;
  }

  /** Ids handed out so far: the most facts the session can hold. */
  get issued(): number {
    return this.#next;
  }

  next(): { factId: string; replacement: boolean } {
    if (this.#next > 0 && this.#random() < this.#replaceShare) {
      const recent = Math.min(this.#next, 1_000);
      return { factId: `f-${this.#next - 1 - Math.floor(this.#random() * recent)}`, replacement: true };
    }
    const factId = `f-${this.#next}`;
    this.#next += 1;
    return { factId, replacement: false };
  }
}
