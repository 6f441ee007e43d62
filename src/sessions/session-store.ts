// The working-memory contract shared by the Redis and in-process stores; the evaluation layer depends only on this.

/** Aggregate functions an accumulator maintains; count, sum and avg incrementally, min and max from an ordered set. */
export type AccumulatorFunction = 'count' | 'sum' | 'avg' | 'min' | 'max';

/** One running aggregate over a session's working memory, e.g. the count of failed logins in the last 600 s. */
export interface AccumulatorSpec {
  /** Stable id (letters, digits, `.`, `_`, `:`, `-`), e.g. derived from the rule id and the node path. */
  readonly id: string;
  readonly fn: AccumulatorFunction;
  /** Sliding window by event time; facts older than `now - windowMs` stop contributing. Absent: all facts. */
  readonly windowMs?: number | undefined;
}

/** What one fact adds to one accumulator; the caller decides (the `where` predicate runs in JS). */
export interface Contribution {
  readonly accumulatorId: string;
  /** 1 for count; the field's numeric value for sum, avg, min, max. */
  readonly value: number;
}

export interface SessionInfo {
  readonly id: string;
  readonly rulesetId: string;
  /** Epoch ms. */
  readonly createdAt: number;
  /**
   * Epoch ms (the writers' clock) when the session expires unless written to again. A write that changes the session
   * moves it to `now + ttl` once it has fallen more than ttl / 16 behind that, so right after a write it lies between
   * `now + ttl - ttl / 16` and `now + ttl`; it is always the expiry the store really applies.
   */
  readonly expiresAt: number;
  readonly factCount: number;
}

export interface SessionSnapshot extends SessionInfo {
  readonly facts: Record<string, unknown>;
  /** Rule ids fired after the most recent applied write. */
  readonly firedRules: number[];
  /** Bumped by every add or retract. */
  readonly version: number;
  /** The aggregates stored with the fired set (setFired); undefined when the stored fired set came without them. */
  readonly aggregates: AggregatesAsOf | undefined;
}

/** Aggregate value per accumulator id; null when no fact contributes (avg, min, max of nothing). */
export type Aggregates = Record<string, number | null>;

/** The aggregates a write evaluated its rules on, stored with the fired set they gave. */
export interface AggregatesAsOf {
  /** Value per accumulator id: finite numbers or null. */
  readonly values: Aggregates;
  /** Epoch ms: the write's `now`, where its windows ended. */
  readonly asOf: number;
}

export interface CreateSessionInput {
  readonly id: string;
  readonly rulesetId: string;
  readonly ttlSeconds: number;
  /** Epoch ms, the caller's clock. */
  readonly now: number;
}

export interface AddFactInput {
  readonly factId: string;
  readonly fact: unknown;
  /** Event time (epoch ms) from the fact's timestamp field, or arrival time. */
  readonly eventTimeMs: number;
  readonly contributions: readonly Contribution[];
  /**
   * Every accumulator of the session's ruleset; aggregates are returned for each. Never mutate an array once passed:
   * stores may keep what they derive from it (validation, JSON, key names) for as long as the array lives.
   */
  readonly specs: readonly AccumulatorSpec[];
  readonly now: number;
  readonly maxFacts: number;
}

/** What one applied add changed in the session's fired set, against the fired set stored before it. */
export interface FiredChange {
  readonly activated: number[];
  readonly deactivated: number[];
}

export interface AddFactResult {
  readonly aggregates: Aggregates;
  readonly factCount: number;
  /** True when the fact id was present and its fact (and contributions) were replaced; false for a duplicate. */
  readonly replaced: boolean;
  /** The replaced fact, when `replaced`. */
  readonly oldFact: unknown;
  /** Session version after this write (unchanged by a duplicate); pass it to setFired. */
  readonly version: number;
  /**
   * True when the fact id was present with byte-identical fact JSON: nothing was applied again (no contribution, no
   * event time, no version bump); windows were still evicted and the TTL refreshed.
   */
  readonly duplicate: boolean;
  /** For a duplicate: the change setFired stored for this fact id when it was first applied; undefined when none was. */
  readonly change: FiredChange | undefined;
}

export interface RetractFactInput {
  /** As for AddFactInput: never mutated once passed. */
  readonly specs: readonly AccumulatorSpec[];
  readonly now: number;
}

export interface RetractFactResult {
  readonly aggregates: Aggregates;
  readonly factCount: number;
  readonly removed: boolean;
  readonly version: number;
}

export interface SetFiredResult {
  /** The fired set stored before this call: the baseline for activated/deactivated. */
  readonly previous: number[];
  /** False when a newer version already stored its fired set (a concurrent writer won); nothing was changed. */
  readonly applied: boolean;
}

/**
 * Working memory of stateful sessions. Every write is one atomic step per session, so concurrent writers
 * (HTTP and Kafka at once) never lose a fact or count one twice.
 * Errors: VALIDATION_ERROR (bad ids, ttl, specs), CONFLICT (session exists), SESSION_FULL, UNAVAILABLE (Redis down).
 */
export interface SessionStore {
  /** Creates a session; CONFLICT when the id is taken. */
  create(input: CreateSessionInput): Promise<SessionInfo>;
  /** The session with its facts and fired set; undefined when unknown or expired. */
  get(id: string): Promise<SessionSnapshot | undefined>;
  /** True when a session was deleted. */
  delete(id: string): Promise<boolean>;
  /**
   * Adds or replaces a fact and applies its contributions; an identical re-send is a duplicate and applies nothing.
   * Undefined when the session is unknown or expired.
   */
  addFact(id: string, input: AddFactInput): Promise<AddFactResult | undefined>;
  /** Removes a fact, its contributions and its stored change; undefined when the session is unknown or expired. */
  retractFact(id: string, factId: string, input: RetractFactInput): Promise<RetractFactResult | undefined>;
  /**
   * Stores the fired set computed for `version` unless a newer one is stored; undefined when the session is gone.
   * With `factId` (an add's), an applied call also stores the change against the previous fired set under that fact id,
   * in the same atomic step; addFact hands it back when the identical fact is sent again. An applied call also replaces
   * the stored aggregates with `aggregates` (removes them when absent), so get shows the values the fired set came from.
   */
  setFired(
    id: string,
    fired: readonly number[],
    version: number,
    factId?: string,
    aggregates?: AggregatesAsOf,
  ): Promise<SetFiredResult | undefined>;
  /** True when the backing store answers. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}
