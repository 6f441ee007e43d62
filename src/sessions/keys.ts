// Every Redis key of a session, built in one place; `{id}` is a hash tag so one session's keys share a cluster slot.

export interface SessionKeys {
  /**
   * Hash: ruleset_id, created_at, expires_at, ttl_ms, version, fired, fired_version, aggregates and aggregates_at (stored
   * with the fired set), specs (last registered list).
   */
  readonly meta: string;
  /** Hash: fact_id -> fact JSON. */
  readonly facts: string;
  /** Hash: fact_id -> JSON {t: event time, c: [[accumulator id, value], ...]}. */
  readonly contributions: string;
  /** Hash: `<accumulator id>:n` count and `<accumulator id>:s` sum of contributions currently counted. */
  readonly totals: string;
  /** Set: accumulator ids of every specs list an add registered (once per list), so delete finds their ordered sets. */
  readonly accumulators: string;
  /** Hash: fact_id -> JSON {activated, deactivated}: the fired-set change its applied write caused, for re-sends. */
  readonly changes: string;
}

export function sessionKeys(prefix: string, id: string): SessionKeys {
  const base = `${prefix}session:{${id}}`;
  return {
    meta: `${base}:meta`,
    facts: `${base}:facts`,
    contributions: `${base}:contrib`,
    totals: `${base}:totals`,
    accumulators: `${base}:accs`,
    changes: `${base}:changes`,
  };
}

/** Sorted set of `<fact id>|<value>` by event time, for window eviction (the value is what leaves the sum). */
export function windowKey(prefix: string, id: string, accumulatorId: string): string {
  return `${prefix}session:{${id}}:acc:${accumulatorId}:time`;
}

/** Sorted set of fact ids by contributed value, for min and max. */
export function valueKey(prefix: string, id: string, accumulatorId: string): string {
  return `${prefix}session:{${id}}:acc:${accumulatorId}:value`;
}
