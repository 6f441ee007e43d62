// In-process working memory with the Redis store's semantics, for a single instance without REDIS_URL.
import { firedChange, NO_CHANGE, storableAggregates } from './fired-change.ts';
import {
  checkAddFact,
  checkId,
  checkRetractFact,
  checkTime,
  checkTtl,
  refreshSlackMs,
  sessionExists,
  sessionFull,
} from './session-limits.ts';
import {
  type AddFactInput,
  type AddFactResult,
  type Aggregates,
  type CreateSessionInput,
  type FiredChange,
  NewerRulesError,
  type RetractFactInput,
  type RetractFactResult,
  type SessionInfo,
  type SessionSnapshot,
  type SessionStore,
} from './session-store.ts';
import { WorkingMemory } from './working-memory.ts';

export interface MemorySessionStoreOptions {
  /** Wall clock for TTL expiry (epoch ms); default Date.now. Event-time windows use each call's `now`. */
  readonly clock?: () => number;
}

interface MemorySession {
  readonly id: string;
  readonly rulesetId: string;
  readonly createdAt: number;
  readonly ttlMs: number;
  expiresAt: number;
  /** Wall-clock deadline; the session is gone once the clock passes it. */
  deadline: number;
  readonly memory: WorkingMemory;
  fired: readonly number[];
  /** Stored with the fired set as evaluated (Infinity included): made storable only when read, as most never are. */
  aggregates: { readonly values: Aggregates; readonly asOf: number } | undefined;
  /** Per fact id, the fired-set change its applied add caused. */
  readonly changes: Map<string, FiredChange>;
  /** The newest rules revision a write brought (see AddFactInput.revision). */
  revision: number;
}

/** How often expired sessions are let go even if nothing asks for them again (Redis frees them at their TTL). */
const SWEEP_MS = 60_000;

export class MemorySessionStore implements SessionStore {
  readonly #sessions = new Map<string, MemorySession>();
  readonly #clock: () => number;
  readonly #sweeper: NodeJS.Timeout;

  constructor(options: MemorySessionStoreOptions = {}) {
    this.#clock = options.clock ?? Date.now;
    this.#sweeper = setInterval(() => this.sweepExpired(), SWEEP_MS).unref();
  }

  /** Lets go of every session past its TTL; returns how many. Runs every minute by itself. */
  sweepExpired(): number {
    const now = this.#clock();
    let swept = 0;
    for (const [id, session] of this.#sessions) {
      if (now < session.deadline) continue;
      this.#sessions.delete(id);
      swept += 1;
    }
    return swept;
  }

  async create(input: CreateSessionInput): Promise<SessionInfo> {
    checkId('session id', input.id);
    checkId('ruleset id', input.rulesetId);
    checkTtl(input.ttlSeconds);
    checkTime('now', input.now);
    if (this.#live(input.id)) throw sessionExists(input.id);
    const ttlMs = input.ttlSeconds * 1000;
    const session: MemorySession = {
      id: input.id,
      rulesetId: input.rulesetId,
      createdAt: input.now,
      ttlMs,
      expiresAt: input.now + ttlMs,
      deadline: this.#clock() + ttlMs,
      memory: new WorkingMemory(),
      fired: [],
      aggregates: undefined,
      changes: new Map(),
      revision: Number.NEGATIVE_INFINITY,
    };
    this.#sessions.set(input.id, session);
    return info(session);
  }

  async get(id: string): Promise<SessionSnapshot | undefined> {
    checkId('session id', id);
    const session = this.#live(id);
    if (!session) return undefined;
    // fromEntries defines own properties, so a fact id such as `__proto__` is a fact like any other.
    const facts = Object.fromEntries(Array.from(session.memory.facts, ([factId, fact]) => [factId, JSON.parse(fact.json)]));
    return {
      ...info(session),
      facts,
      firedRules: [...session.fired],
      version: session.memory.version,
      aggregates: session.aggregates && { values: storableAggregates(session.aggregates.values), asOf: session.aggregates.asOf },
    };
  }

  async delete(id: string): Promise<boolean> {
    checkId('session id', id);
    const existed = this.#live(id) !== undefined;
    this.#sessions.delete(id);
    return existed;
  }

  async addFact(id: string, input: AddFactInput): Promise<AddFactResult | undefined> {
    const fact = checkAddFact(id, input);
    const session = this.#live(id);
    if (!session) return undefined;
    checkRevision(session, input.revision);
    const { memory } = session;
    const outcome = memory.add(input.factId, fact, input.specs, input.now, input.maxFacts, {
      arrival: input.arrival === true,
      evictOldest: input.evictOldest === true,
      ...(input.maxBytes === undefined ? {} : { maxBytes: input.maxBytes }),
    });
    if (outcome.kind === 'full') throw sessionFull(id, input, outcome.by);
    this.#touch(session, input.now);
    const aggregates = memory.aggregates(input.specs);
    if (outcome.kind === 'duplicate') {
      return {
        aggregates,
        factCount: memory.facts.size,
        replaced: false,
        version: memory.version,
        duplicate: true,
        change: copyChange(session.changes.get(input.factId) ?? NO_CHANGE),
      };
    }
    // The changes of facts let go stay while the working memory remembers them, so a redelivery answers as a duplicate.
    for (const forgotten of outcome.forgotten) session.changes.delete(forgotten);
    const change = this.#storeFired(session, input.fire(aggregates), aggregates, input.now);
    session.changes.set(input.factId, change);
    session.revision = Math.max(session.revision, input.revision ?? Number.NEGATIVE_INFINITY);
    return {
      aggregates,
      factCount: memory.facts.size,
      replaced: outcome.old !== undefined,
      version: memory.version,
      duplicate: false,
      change: copyChange(change),
    };
  }

  async retractFact(id: string, factId: string, input: RetractFactInput): Promise<RetractFactResult | undefined> {
    checkRetractFact(id, factId, input);
    const session = this.#live(id);
    if (!session) return undefined;
    checkRevision(session, input.revision);
    const { memory } = session;
    const removed = memory.retract(factId, input.specs, input.now);
    const aggregates = memory.aggregates(input.specs);
    let change = NO_CHANGE;
    if (removed !== undefined) {
      session.changes.delete(factId);
      change = this.#storeFired(session, input.fire(aggregates), aggregates, input.now);
      session.revision = Math.max(session.revision, input.revision ?? Number.NEGATIVE_INFINITY);
      this.#touch(session, input.now);
    }
    return {
      aggregates,
      factCount: memory.facts.size,
      removed: removed !== undefined,
      version: memory.version,
      change: copyChange(change),
    };
  }

  async ping(): Promise<boolean> {
    return true;
  }

  async close(): Promise<void> {
    clearInterval(this.#sweeper);
    this.#sessions.clear();
  }

  #storeFired(session: MemorySession, fired: readonly number[], aggregates: Aggregates, now: number): FiredChange {
    const change = firedChange(session.fired, fired);
    session.fired = [...fired];
    // The aggregates are as of where the windows ended: the latest now any write brought, which may be ahead of this one.
    session.aggregates = { values: aggregates, asOf: Math.max(now, session.memory.watermark) };
    return change;
  }

  #live(id: string): MemorySession | undefined {
    const session = this.#sessions.get(id);
    if (session && this.#clock() >= session.deadline) {
      this.#sessions.delete(id);
      return undefined;
    }
    return session;
  }

  // As in Redis: with less than a whole TTL left, the expiry moves to ttl + ttl / 16 past the write.
  #touch(session: MemorySession, now: number): void {
    if (session.expiresAt - now >= session.ttlMs) return;
    const refreshed = session.ttlMs + refreshSlackMs(session.ttlMs);
    session.expiresAt = now + refreshed;
    session.deadline = this.#clock() + refreshed;
  }
}

function info(session: MemorySession): SessionInfo {
  return {
    id: session.id,
    rulesetId: session.rulesetId,
    createdAt: session.createdAt,
    expiresAt: session.expiresAt,
    factCount: session.memory.facts.size,
  };
}

/** Refuses a write evaluated under older rules than the newest a stored write of the session brought. */
function checkRevision(session: MemorySession, revision: number | undefined): void {
  if (revision !== undefined && session.revision > revision) throw new NewerRulesError(session.revision);
}

function copyChange(change: FiredChange): FiredChange {
  return { activated: [...change.activated], deactivated: [...change.deactivated] };
}
