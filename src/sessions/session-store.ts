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
   * Epoch ms (the writers' clock) when the session expires unless written to again. A write finding less than ttl left
   * moves it to `now + ttl + ttl / 16`, so right after a write it lies between `now + ttl` and `now + ttl + ttl / 16`;
   * it is always the expiry the store really applies.
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
  /** The aggregates the fired set was evaluated on; undefined before the first write. */
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
  /** Event time (epoch ms) from the fact's timestamp field, or arrival time (`now`). */
  readonly eventTimeMs: number;
  /**
   * The fact named no event time, so eventTimeMs is its arrival: the store takes the session's time instead when that is
   * later (another instance's clock ahead of this one's moved it on), so the fact counts in windows ending now.
   */
  readonly arrival?: boolean;
  /**
   * A new fact in a session holding maxFacts makes room by retracting the facts with the oldest event time instead of
   * being refused (SESSION_FULL): the implicit sessions of the Kafka streaming mode, which nobody can retract from.
   */
  readonly evictOldest?: boolean;
  readonly contributions: readonly Contribution[];
  /**
   * Every accumulator of the session's ruleset; aggregates are returned for each. Never mutate an array once passed:
   * stores may keep what they derive from it (validation, JSON, key names) for as long as the array lives.
   */
  readonly specs: readonly AccumulatorSpec[];
  readonly now: number;
  readonly maxFacts: number;
  /**
   * Most characters of fact JSON the session may hold (RULES_SESSION_MAX_BYTES); none when absent. Past it the add is
   * refused as SESSION_FULL, or with evictOldest makes room the same way.
   */
  readonly maxBytes?: number;
  /**
   * The rules that hold on the aggregates after this add (the ids of the fired rules). The store calls it while it
   * applies the add and stores the fired set, and the change against the one before, in the same atomic step. It may be
   * called more than once (a write that lost a race to another instance is applied again) and must not throw.
   */
  readonly fire: (aggregates: Aggregates) => readonly number[];
  /**
   * The rules revision `fire` evaluates; a session last written under a newer one refuses the write (NewerRulesError),
   * so no instance answers or stores with rules older than the session has seen. Undefined: no check.
   */
  readonly revision?: number | undefined;
}

/** A write refused because the session was last written under newer rules than the writer's: reload them, write again. */
export class NewerRulesError extends Error {
  readonly revision: number;

  constructor(revision: number) {
    super(`the session was last written under rules revision ${revision}`);
    this.name = 'NewerRulesError';
    this.revision = revision;
  }
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
  /** Session version after this write (unchanged by a duplicate). */
  readonly version: number;
  /**
   * True when the fact id was present with byte-identical fact JSON: nothing was applied again (no contribution, no
   * version bump, `fire` not called); windows were still evicted and the TTL refreshed.
   */
  readonly duplicate: boolean;
  /**
   * What the add changed in the fired set; for a duplicate, the change stored when the fact was first applied (empty when
   * a session written by an earlier version holds none).
   */
  readonly change: FiredChange;
}

export interface RetractFactInput {
  /** As for AddFactInput: never mutated once passed. */
  readonly specs: readonly AccumulatorSpec[];
  readonly now: number;
  /** As for AddFactInput; called only when a fact is removed. */
  readonly fire: (aggregates: Aggregates) => readonly number[];
  /** As for AddFactInput. */
  readonly revision?: number | undefined;
}

export interface RetractFactResult {
  readonly aggregates: Aggregates;
  readonly factCount: number;
  readonly removed: boolean;
  readonly version: number;
  /** What the retraction changed in the fired set; empty when nothing was removed. */
  readonly change: FiredChange;
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
   * Adds or replaces a fact, applies its contributions, and stores the fired set `fire` gives with the aggregates (as of
   * `now`) and, under the fact id, the change against the fired set before; an identical re-send is a duplicate, applies
   * nothing and hands that change back. Undefined when the session is unknown or expired.
   */
  addFact(id: string, input: AddFactInput): Promise<AddFactResult | undefined>;
  /**
   * Removes a fact, its contributions and its stored change, and stores the fired set `fire` gives (no change is stored
   * under a fact id: a retraction is not a fact write); undefined when the session is unknown or expired.
   */
  retractFact(id: string, factId: string, input: RetractFactInput): Promise<RetractFactResult | undefined>;
  /** True when the backing store answers. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}
