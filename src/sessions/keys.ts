// Every Redis key of a session, built in one place; `{id}` is a hash tag so one session's keys share a cluster slot.

export interface SessionKeys {
  /**
   * Hash: ruleset_id, created_at, expires_at, ttl_ms, stamp (of the latest write), version, watermark (latest now of any
   * write), fired, aggregates and aggregates_at (stored with the fired set).
   */
  readonly meta: string;
  /** Hash: fact_id -> fact JSON. */
  readonly facts: string;
  /** Hash: fact_id -> JSON {t: event time, c: [[accumulator id, value], ...]}, numbers as strings. */
  readonly contributions: string;
  /** Hash: fact_id -> JSON {activated, deactivated}: the fired-set change its applied add caused, for re-sends. */
  readonly changes: string;
  /**
   * List: `<stamp> <fact id>` of the latest writes (create: `<stamp> `), oldest first, at most SESSION_LOG_LENGTH, so a
   * copy a few writes behind reads only the facts they touched.
   */
  readonly log: string;
  /**
   * Sorted set: fact id by the version its leaving made, of the facts let go to make room in a full streaming session
   * (at most LET_GO_LENGTH); their changes stay in `changes`, so a redelivery of one answers as the duplicate it is.
   */
  readonly letGo: string;
  /** Hash: fact id -> fingerprint of its JSON (fingerprintOf), for each fact in `letGo`. */
  readonly letGoPrints: string;
}

/** Writes the log keeps; write-session.lua trims to this many. */
export const SESSION_LOG_LENGTH = 64;

export function sessionKeys(prefix: string, id: string): SessionKeys {
  const base = `${prefix}session:{${id}}`;
  return {
    meta: `${base}:meta`,
    facts: `${base}:facts`,
    contributions: `${base}:contrib`,
    changes: `${base}:changes`,
    log: `${base}:log`,
    letGo: `${base}:letgo`,
    letGoPrints: `${base}:letgoprints`,
  };
}

/**
 * Keys an earlier layout kept running totals in (a totals hash, an accumulator id set naming per-accumulator sorted
 * sets). Nothing reads or writes them any more; delete removes them with the session and they expire with it otherwise.
 */
export interface LegacySessionKeys {
  readonly totals: string;
  readonly accumulators: string;
  /** The two sorted sets of one accumulator id found in the `accumulators` set. */
  readonly perAccumulator: (accumulatorId: string) => readonly string[];
}

export function legacySessionKeys(prefix: string, id: string): LegacySessionKeys {
  const base = `${prefix}session:{${id}}`;
  return {
    totals: `${base}:totals`,
    accumulators: `${base}:accs`,
    perAccumulator: (accumulatorId) => [`${base}:acc:${accumulatorId}:time`, `${base}:acc:${accumulatorId}:value`],
  };
}
