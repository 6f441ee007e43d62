// The session use case shared by HTTP and Kafka: add or retract a fact, then evaluate the session's rules over its working memory.
import { createHash, randomUUID } from 'node:crypto';
import type { Explanation } from '../contracts/evaluation.ts';
import { type Accumulator, type RuleEngine, renderAggregate } from '../engine/index.ts';
import { AppError } from '../errors.ts';
import { checkTtl, DEFAULT_TTL_SECONDS, sessionFull } from '../sessions/session-limits.ts';
import {
  type AccumulatorSpec,
  type Aggregates,
  type Contribution,
  type FiredChange,
  NewerRulesError,
  type SessionInfo,
  type SessionStore,
} from '../sessions/session-store.ts';
import type { ExecutionsRepository, RulesetsRepository } from '../store/types.ts';
import { type EvaluationObserver, type Facts, isoTimestamp } from './evaluator.ts';
import { eventTimeOf } from './event-time.ts';
import { newExecutionId } from './execution-id.ts';
import { valueAsOfWrite, valuesAsOfWrite } from './session-aggregates.ts';

export interface SessionEvaluatorOptions {
  /** The rules; `reload` brings them up to a revision another instance wrote a session under (RuleCatalog.reload). */
  catalog: { readonly engine: RuleEngine; reload?(revision: number): Promise<void> };
  rulesets: Pick<RulesetsRepository, 'get'>;
  sessions: SessionStore;
  executions: Pick<ExecutionsRepository, 'record'>;
  observer?: EvaluationObserver;
  /** Told about every session write and delete; feeds working_memory_size and node_memory.hit_rate. */
  writes?: SessionWriteObserver;
  /** RULES_SESSION_MAX_FACTS. */
  maxFacts: number;
  /** RULES_SESSION_MAX_BYTES: characters of fact JSON one session may hold; no limit when absent. */
  maxBytes?: number;
  /** RULES_SESSION_TIMESTAMP_FIELD; default `timestamp`. */
  timestampField?: string;
  /** TTL of sessions created implicitly by a stream (addFactToImplicitSession); default one hour. */
  implicitTtlSeconds?: number;
  /** Wall clock in epoch ms: session times, arrival time and the end of every window. Default Date.now. */
  clock?: () => number;
}

/** Sees each session write as it is answered (src/evaluation/session-metrics.ts). */
export interface SessionWriteObserver {
  /** One add or retract: the working memory's size after it, and whether the fired set changed. */
  written(sessionId: string, factCount: number, changed: boolean): void;
  deleted(sessionId: string): void;
}

/** A session as transports show it; times are ISO 8601. */
export interface SessionView {
  id: string;
  /** Null for a session a stream created over a domain. */
  ruleset_id: number | null;
  domain: string;
  created_at: string;
  expires_at: string;
  fact_count: number;
}

/** One accumulate node of the session's current rules and its value. */
export interface SessionAggregate {
  rule_id: number;
  /** The node as explain renders it, e.g. `count(type == "login_failed") over 600s`. */
  accumulator: string;
  /** As of aggregates_as_of; null for avg, min, max of nothing. A node changed since then: its empty value (0 or null). */
  value: number | null;
}

export interface SessionDetails extends SessionView {
  facts: Record<string, unknown>;
  /** Rules that held after the latest write, in fired order. */
  active_rules: number[];
  /** Bumped by every add or retract. */
  version: number;
  /** Every accumulate node of the session's enabled rules, in fired order (priority, then id) then tree order. */
  aggregates: SessionAggregate[];
  /** When the latest write evaluated the aggregates (its windows ended then); created_at before any write. */
  aggregates_as_of: string;
}

/** Why a rule of the session did or did not hold: the explain shape over the session's aggregates. */
export interface SessionExplanation extends Explanation {
  /** The rules revision the rule was explained at. */
  revision: number;
  session_id: string;
  /** The working-memory fact ordinary conditions were checked against; null: the empty fact `{}`, as a retraction evaluates. */
  fact_id: string | null;
  /** When the latest write evaluated the aggregates accumulate nodes were compared with; created_at before any write. */
  aggregates_as_of: string;
}

/** The result of one add or retract: what holds now, and what changed since the previous write. */
export interface SessionEvaluation {
  session_id: string;
  fact_id: string;
  execution_id: string;
  /** Every rule of the session that holds now, in fired order (as stateless evaluate orders them). */
  fired_rules: number[];
  actions: string[];
  /** Milliseconds for the whole write: working memory plus evaluation. */
  latency_ms: number;
  /** Rules in fired_rules that did not hold after the previous write. */
  activated: number[];
  /** Rules that held after the previous write and no longer do. */
  deactivated: number[];
  fact_count: number;
  /** Rules revision the session was evaluated against. */
  revision: number;
  /** Add: the fact id was present and its fact was replaced. Retract: always false. */
  replaced: boolean;
  /**
   * Add: the fact id was present with the identical fact (a re-send or redelivery). Nothing was applied again, and
   * activated/deactivated are the change the first write caused. Retract: always false.
   */
  duplicate: boolean;
}

/** How a session write is kept beyond the session. */
export interface WriteOptions {
  /** False: no execution record is written (KAFKA_RECORD_EXECUTIONS=false; the results topic is the record). */
  readonly record?: boolean;
}

/** What a session evaluates: the enabled rules of one domain (a ruleset's, or a stream's). */
interface Scope {
  readonly domain: string;
  readonly rulesetId: number | null;
}

const RULESET_SESSION = /^rs-(\d{1,10})-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const STREAM_SESSION = /^stream:([^:]+):([^:]+)$/;
const STORE_ID = /^[A-Za-z0-9._:-]{1,200}$/;
const PLAIN_PART = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,79}$/;
/** An id part idPart hashed: `..` and a SHA-256 in base64url. */
const HASHED_PART = /^\.\.[A-Za-z0-9_-]{43}$/;
const MAX_CACHED_RULESETS = 10_000;
/** Sessions remembered as written under newer rules than the rules store holds (a restore from backup): few, if any. */
const MAX_CACHED_SESSIONS = 10_000;
/** Tries of one session write against rules that keep changing under it (each refusal loads the newer rules first). */
const MAX_RULES_ATTEMPTS = 5;
const NO_SPECS: readonly AccumulatorSpec[] = Object.freeze([]);

/**
 * How far past this instance's clock an event time may be. A later one (a clock far ahead, a timestamp in micro- or
 * nanoseconds) would count in every window for as long as the session lives, since windows end at the latest time seen.
 */
export const MAX_FUTURE_EVENT_MS = 3_600_000;

function futureEvent(field: string, eventTimeMs: number, now: number): AppError {
  const ahead = Math.round((eventTimeMs - now) / 1_000);
  return new AppError(
    'VALIDATION_ERROR',
    `event.${field} is ${ahead} s ahead of the service's clock; at most ${MAX_FUTURE_EVENT_MS / 1_000} s ahead is accepted (epoch milliseconds are expected, not micro- or nanoseconds).`,
  );
}

/**
 * One part of a stream session id, kept within the store's id alphabet and free of `:`: the text itself when it is
 * plain, else `.` + base64url of it, else (too long) `..` + its SHA-256, which cannot be decoded back.
 */
export function idPart(text: string): string {
  if (PLAIN_PART.test(text)) return text;
  const encoded = Buffer.from(text, 'utf8').toString('base64url');
  if (encoded.length <= 80) return `.${encoded}`;
  return `..${createHash('sha256').update(text, 'utf8').digest('base64url')}`;
}

function decodePart(part: string): string | undefined {
  if (part.startsWith('..')) return undefined;
  return part.startsWith('.') ? Buffer.from(part.slice(1), 'base64url').toString('utf8') : part;
}

type EvaluationResult = ReturnType<RuleEngine['evaluate']>;

/** The store calls `fire` with the aggregates of the write it applies (perhaps more than once): the last call counts. */
class LatestEvaluation {
  readonly #engine: RuleEngine;
  readonly #domain: string;
  readonly #fact: Facts;
  #latest: { aggregates: Aggregates; result: EvaluationResult } | undefined;

  constructor(engine: RuleEngine, domain: string, fact: Facts) {
    this.#engine = engine;
    this.#domain = domain;
    this.#fact = fact;
  }

  readonly fire = (aggregates: Aggregates): readonly number[] => {
    const result = this.#engine.evaluate(this.#fact, { domain: this.#domain, aggregates });
    this.#latest = { aggregates, result };
    return result.fired_rules;
  };

  /** The evaluation on these aggregates: the one `fire` made for them, else a new one (a duplicate, or no fact removed). */
  of(aggregates: Aggregates): EvaluationResult {
    if (this.#latest?.aggregates === aggregates) return this.#latest.result;
    return this.#engine.evaluate(this.#fact, { domain: this.#domain, aggregates });
  }
}

/** The id of the session a stream keeps for one message key over one domain. */
export function streamSessionId(domain: string, key: string): string {
  return `stream:${idPart(domain)}:${idPart(key)}`;
}

function sessionNotFound(id: string): AppError {
  return new AppError('SESSION_NOT_FOUND', `Session '${id}' does not exist or has expired.`);
}

export class SessionEvaluator {
  readonly #options: SessionEvaluatorOptions;
  readonly #clock: () => number;
  readonly #timestampField: string;
  readonly #domains = new Map<number, string>();
  /** Store specs per engine and domain, computed once per compiled engine. */
  readonly #specs = new WeakMap<RuleEngine, Map<string, readonly AccumulatorSpec[]>>();
  /** Sessions written under newer rules than the rules store holds: their revision, and the engine's when that was found. */
  readonly #aheadOfRules = new Map<string, { readonly session: number; readonly engine: number }>();

  constructor(options: SessionEvaluatorOptions) {
    this.#options = options;
    this.#clock = options.clock ?? Date.now;
    this.#timestampField = options.timestampField ?? 'timestamp';
  }

  /** Opens a session over a ruleset's rules; NOT_FOUND when the ruleset does not exist. */
  async create(rulesetId: number, ttlSeconds: number = DEFAULT_TTL_SECONDS): Promise<SessionView> {
    // Checked before the ruleset is looked up, with the stores' own check.
    checkTtl(ttlSeconds);
    const domain = await this.#rulesetDomain(rulesetId);
    if (domain === undefined) throw new AppError('NOT_FOUND', `Ruleset ${rulesetId} does not exist.`);
    const info = await this.#options.sessions.create({
      id: `rs-${rulesetId}-${randomUUID()}`,
      rulesetId: String(rulesetId),
      ttlSeconds,
      now: this.#clock(),
    });
    return view(info, { domain, rulesetId });
  }

  /**
   * The session with its facts, and the rules active and aggregates evaluated at its latest write (read-only: windows are
   * not evicted up to now); SESSION_NOT_FOUND when unknown or expired.
   */
  async get(sessionId: string): Promise<SessionDetails> {
    const scope = await this.#scopeOf(sessionId);
    const snapshot = await this.#options.sessions.get(sessionId);
    if (snapshot === undefined) throw sessionNotFound(sessionId);
    const stored = snapshot.aggregates?.values ?? {};
    const aggregates = this.#options.catalog.engine.accumulators(scope.domain).map((accumulator) => ({
      rule_id: accumulator.ruleId,
      accumulator: renderAggregate(accumulator.node),
      value: valueAsOfWrite(accumulator, stored),
    }));
    return {
      ...view(snapshot, scope),
      facts: snapshot.facts,
      active_rules: snapshot.firedRules,
      version: snapshot.version,
      aggregates,
      aggregates_as_of: isoTimestamp(snapshot.aggregates?.asOf ?? snapshot.createdAt),
    };
  }

  /**
   * Why a rule of the session did or did not hold: accumulate nodes compare the aggregates of the latest write (as get
   * shows them), ordinary conditions the fact `factId` of the working memory, else `{}`. Read-only. SESSION_NOT_FOUND;
   * RULE_NOT_FOUND for an unknown rule or one outside the session's domain; NOT_FOUND when the session holds no such fact.
   */
  async explain(sessionId: string, ruleId: number, factId?: string): Promise<SessionExplanation> {
    const scope = await this.#scopeOf(sessionId);
    const snapshot = await this.#options.sessions.get(sessionId);
    if (snapshot === undefined) throw sessionNotFound(sessionId);
    const engine = this.#options.catalog.engine;
    const rule = engine.getRule(ruleId);
    if (rule === undefined) throw new AppError('RULE_NOT_FOUND', `Rule ${ruleId} does not exist.`);
    if (rule.domain !== scope.domain) {
      throw new AppError(
        'RULE_NOT_FOUND',
        `Rule ${ruleId} is not in the ruleset of session '${sessionId}': it belongs to domain '${rule.domain}', the session to '${scope.domain}'.`,
      );
    }
    if (factId !== undefined && !Object.hasOwn(snapshot.facts, factId)) {
      throw new AppError('NOT_FOUND', `Session '${sessionId}' holds no fact '${factId}'.`);
    }
    const fact = factId === undefined ? {} : snapshot.facts[factId];
    const aggregates = valuesAsOfWrite(engine.ruleAccumulators(ruleId), snapshot.aggregates?.values ?? {});
    const explained = engine.explain(ruleId, fact, { aggregates });
    if (explained === undefined) throw new AppError('RULE_NOT_FOUND', `Rule ${ruleId} does not exist.`);
    const asOf = isoTimestamp(snapshot.aggregates?.asOf ?? snapshot.createdAt);
    const against = factId === undefined ? 'an empty fact (no fact_id given)' : `fact '${factId}'`;
    return {
      ...explained,
      explanation: `${explained.explanation} Aggregates as of ${asOf}; other conditions checked against ${against}.`,
      revision: engine.revision,
      session_id: sessionId,
      fact_id: factId ?? null,
      aggregates_as_of: asOf,
    };
  }

  /** Deletes the session and its working memory; SESSION_NOT_FOUND when unknown or expired. */
  async delete(sessionId: string): Promise<void> {
    if (!STORE_ID.test(sessionId) || !(await this.#options.sessions.delete(sessionId))) throw sessionNotFound(sessionId);
    this.#options.writes?.deleted(sessionId);
  }

  /**
   * Adds a fact (or replaces the fact with the same id) and evaluates; SESSION_NOT_FOUND, SESSION_FULL, VALIDATION_ERROR.
   * The identical fact under an id already held is a duplicate: nothing is applied again and the original change is reported.
   */
  async addFact(sessionId: string, factId: string, event: Facts, options: WriteOptions = {}): Promise<SessionEvaluation> {
    const started = performance.now();
    const scope = await this.#scopeOf(sessionId);
    const outcome = await this.#add(sessionId, scope, factId, event, started, false, options.record !== false);
    if (outcome === undefined) throw sessionNotFound(sessionId);
    return outcome;
  }

  /**
   * Adds a fact to the session a stream keeps for `key` over `domain` (see streamSessionId), creating it on first use
   * with the implicit TTL: the Kafka streaming mode calls this for every message. Same semantics as addFact, except
   * that a full session makes room by retracting its facts with the oldest event time instead of answering SESSION_FULL.
   */
  async addFactToImplicitSession(
    key: string,
    domain: string,
    factId: string,
    event: Facts,
    options: WriteOptions = {},
  ): Promise<SessionEvaluation> {
    const started = performance.now();
    const sessionId = streamSessionId(domain, key);
    const scope: Scope = { domain, rulesetId: null };
    for (let attempt = 0; attempt < 3; attempt += 1) {
      // Nobody can retract from a stream's session: a full one lets its oldest facts go rather than refuse the stream.
      const outcome = await this.#add(sessionId, scope, factId, event, started, true, options.record !== false);
      if (outcome !== undefined) return outcome;
      // A fact no session could hold makes no session: the add to a new one would only be refused.
      const { maxBytes, maxFacts } = this.#options;
      if (maxBytes !== undefined && (JSON.stringify(event)?.length ?? 0) > maxBytes) {
        throw sessionFull(sessionId, { maxFacts, maxBytes }, 'fact');
      }
      try {
        await this.#options.sessions.create({
          id: sessionId,
          rulesetId: `domain.${idPart(domain)}`,
          ttlSeconds: this.#options.implicitTtlSeconds ?? DEFAULT_TTL_SECONDS,
          now: this.#clock(),
        });
      } catch (error) {
        // Another writer created it first: add to that one.
        if (!(error instanceof AppError && error.code === 'CONFLICT')) throw error;
      }
    }
    throw new AppError('UNAVAILABLE', `Session '${sessionId}' expired while it was being created; retry.`);
  }

  /**
   * Retracts a fact and evaluates again. Ordinary conditions then see an empty fact (docs/sessions.md), so only rules
   * that hold on aggregates alone (or on `{}`) stay active. SESSION_NOT_FOUND; NOT_FOUND when the fact is not there.
   */
  async retractFact(sessionId: string, factId: string): Promise<SessionEvaluation> {
    const started = performance.now();
    const scope = await this.#scopeOf(sessionId);
    return this.#underNewestRules(sessionId, async (revision) => {
      const engine = this.#options.catalog.engine;
      const evaluation = new LatestEvaluation(engine, scope.domain, {});
      const retracted = await this.#options.sessions.retractFact(sessionId, factId, {
        specs: this.#specsOf(engine, scope.domain),
        now: this.#clock(),
        fire: evaluation.fire,
        revision,
      });
      if (retracted === undefined) throw sessionNotFound(sessionId);
      if (!retracted.removed) throw new AppError('NOT_FOUND', `Session '${sessionId}' holds no fact '${factId}'.`);
      // A retraction is not a fact write: it stores no change under a fact id (and the store dropped the retracted fact's).
      return this.#finish(
        engine,
        sessionId,
        scope,
        factId,
        {},
        evaluation.of(retracted.aggregates),
        retracted,
        false,
        false,
        started,
        true,
      );
    });
  }

  #add(
    sessionId: string,
    scope: Scope,
    factId: string,
    event: Facts,
    started: number,
    evictOldest: boolean,
    record: boolean,
  ): Promise<SessionEvaluation | undefined> {
    return this.#underNewestRules(sessionId, async (revision) => {
      const engine = this.#options.catalog.engine;
      const accumulators = engine.accumulators(scope.domain);
      const now = this.#clock();
      const evaluation = new LatestEvaluation(engine, scope.domain, event);
      const eventTimeMs = eventTimeOf(event, this.#timestampField);
      if (eventTimeMs !== undefined && eventTimeMs > now + MAX_FUTURE_EVENT_MS) throw futureEvent(this.#timestampField, eventTimeMs, now);
      const added = await this.#options.sessions.addFact(sessionId, {
        factId,
        fact: event,
        eventTimeMs: eventTimeMs ?? now,
        arrival: eventTimeMs === undefined,
        evictOldest,
        contributions: contributionsOf(accumulators, event),
        specs: this.#specsOf(engine, scope.domain),
        now,
        maxFacts: this.#options.maxFacts,
        ...(this.#options.maxBytes === undefined ? {} : { maxBytes: this.#options.maxBytes }),
        fire: evaluation.fire,
        revision,
      });
      if (added === undefined) return undefined;
      // A duplicate reports the change its first add stored; its rules are evaluated here, as the store applied nothing.
      return this.#finish(
        engine,
        sessionId,
        scope,
        factId,
        event,
        evaluation.of(added.aggregates),
        added,
        added.replaced,
        added.duplicate,
        started,
        record,
      );
    });
  }

  /**
   * Runs a write until the store takes it, `write` naming the rules revision it claims to be evaluated under: a session
   * last written under newer rules than this instance holds (another instance saw a change first) refuses it, and the
   * rules are loaded up to that revision before it is worked out again. Should the store of rules itself be behind the
   * session (restored from a backup), its rules are the newest there are: the write claims the session's revision, and so
   * do the session's next ones while this instance's rules stay where they were, so they are neither refused nor read the
   * rules again; a write under still newer rules (the store moved on, another instance heard first) is refused as usual.
   */
  #underNewestRules<T>(sessionId: string, write: (revision: number) => Promise<T>): Promise<T> {
    const engine = this.#options.catalog.engine.revision;
    const ahead = this.#aheadOfRules.get(sessionId);
    const claimed = ahead !== undefined && ahead.engine === engine ? ahead.session : engine;
    // No async frame of its own on the way of every write: only a refusal goes through the retries.
    return write(claimed).catch((error: unknown) => this.#retryUnderNewerRules(sessionId, write, error));
  }

  async #retryUnderNewerRules<T>(sessionId: string, write: (revision: number) => Promise<T>, refusal: unknown): Promise<T> {
    const catalog = this.#options.catalog;
    let error = refusal;
    for (let attempt = 1; ; attempt += 1) {
      if (!(error instanceof NewerRulesError)) throw error;
      if (attempt >= MAX_RULES_ATTEMPTS) {
        throw new AppError('UNAVAILABLE', 'The rules changed again while this session write was evaluated; retry.');
      }
      await catalog.reload?.(error.revision);
      const engine = catalog.engine.revision;
      let claimed = engine;
      if (engine < error.revision) {
        if (this.#aheadOfRules.size >= MAX_CACHED_SESSIONS) this.#aheadOfRules.clear();
        this.#aheadOfRules.set(sessionId, { session: error.revision, engine });
        claimed = error.revision;
      }
      try {
        return await write(claimed);
      } catch (next) {
        error = next;
      }
    }
  }

  /**
   * Records the execution of a write the store applied (with the fired set its evaluation gave), unless `record` is
   * false (KAFKA_RECORD_EXECUTIONS), and builds the answer.
   */
  #finish(
    engine: RuleEngine,
    sessionId: string,
    scope: Scope,
    factId: string,
    fact: Facts,
    result: EvaluationResult,
    written: { factCount: number; change: FiredChange },
    replaced: boolean,
    duplicate: boolean,
    started: number,
    record: boolean,
  ): SessionEvaluation {
    const wallMs = this.#clock();
    const executionId = newExecutionId(wallMs);
    // The whole write, as answered: the record shows the latency its execution_id was given with.
    const latencyMs = performance.now() - started;
    if (record) {
      this.#options.executions.record({
        execution_id: executionId,
        source: 'session',
        domain: scope.domain,
        facts: fact,
        fired_rules: result.fired_rules,
        actions: result.actions,
        latency_ms: latencyMs,
        revision: engine.revision,
        created_at: isoTimestamp(wallMs),
      });
    }
    this.#options.observer?.('session', result);
    const { activated, deactivated } = written.change;
    this.#options.writes?.written(sessionId, written.factCount, activated.length > 0 || deactivated.length > 0);
    return {
      session_id: sessionId,
      fact_id: factId,
      execution_id: executionId,
      fired_rules: result.fired_rules,
      actions: result.actions,
      latency_ms: latencyMs,
      activated,
      deactivated,
      fact_count: written.factCount,
      revision: engine.revision,
      replaced,
      duplicate,
    };
  }

  /**
   * The accumulators of a domain's rules, one array per engine and domain. Only domains with accumulators are cached
   * (they are the rules' own domains): any client can name any other domain (`stream:<domain>:<key>`), and those share
   * one empty array.
   */
  #specsOf(engine: RuleEngine, domain: string): readonly AccumulatorSpec[] {
    let byDomain = this.#specs.get(engine);
    if (byDomain === undefined) {
      byDomain = new Map();
      this.#specs.set(engine, byDomain);
    }
    let specs = byDomain.get(domain);
    if (specs === undefined) {
      const accumulators = engine.accumulators(domain);
      if (accumulators.length === 0) return NO_SPECS;
      specs = accumulators.map((a) => ({ id: a.id, fn: a.fn, windowMs: a.windowMs }));
      byDomain.set(domain, specs);
    }
    return specs;
  }

  /** The domain a session evaluates, read from its id without touching the working memory. */
  async #scopeOf(sessionId: string): Promise<Scope> {
    // No session can have an id outside the store's alphabet: it is unknown, as over HTTP, not a malformed request.
    if (!STORE_ID.test(sessionId)) throw sessionNotFound(sessionId);
    const ruleset = RULESET_SESSION.exec(sessionId);
    if (ruleset !== null) {
      const rulesetId = Number(ruleset[1]);
      const domain = await this.#rulesetDomain(rulesetId);
      if (domain !== undefined) return { domain, rulesetId };
      throw sessionNotFound(sessionId);
    }
    const stream = STREAM_SESSION.exec(sessionId);
    const domain = stream === null ? undefined : decodePart(stream[1]!);
    // A domain part no stream could have written (it does not encode back to itself) names no session.
    if (domain !== undefined && domain.trim() !== '' && idPart(domain) === stream?.[1]) return { domain, rulesetId: null };
    if (HASHED_PART.test(stream?.[1] ?? '')) {
      throw new AppError('VALIDATION_ERROR', `Session '${sessionId}' belongs to a stream whose domain name is too long to serve here.`);
    }
    throw sessionNotFound(sessionId);
  }

  /** A ruleset's domain; rulesets are never deleted nor moved to another domain, so it is cached. */
  async #rulesetDomain(rulesetId: number): Promise<string | undefined> {
    const cached = this.#domains.get(rulesetId);
    if (cached !== undefined) return cached;
    const ruleset = await this.#options.rulesets.get(rulesetId);
    if (ruleset === undefined) return undefined;
    if (this.#domains.size >= MAX_CACHED_RULESETS) this.#domains.clear();
    this.#domains.set(rulesetId, ruleset.domain);
    return ruleset.domain;
  }
}

/** What the fact adds to each accumulator: its where predicate and field decide, in JS, never in the store. */
function contributionsOf(accumulators: readonly Accumulator[], event: Facts): Contribution[] {
  const contributions: Contribution[] = [];
  for (const accumulator of accumulators) {
    const value = accumulator.contribution(event);
    if (value !== undefined) contributions.push({ accumulatorId: accumulator.id, value });
  }
  return contributions;
}

function view(info: SessionInfo, scope: Scope): SessionView {
  return {
    id: info.id,
    ruleset_id: scope.rulesetId,
    domain: scope.domain,
    created_at: isoTimestamp(info.createdAt),
    expires_at: isoTimestamp(info.expiresAt),
    fact_count: info.factCount,
  };
}
