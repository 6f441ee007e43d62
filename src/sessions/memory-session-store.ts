// In-process working memory with the Redis store's semantics, for a single instance without REDIS_URL.
import { AppError } from '../errors.ts';
import { aggregateValue } from './aggregate-value.ts';
import { MinHeap } from './min-heap.ts';
import {
  checkAggregates,
  checkContributions,
  checkId,
  checkMaxFacts,
  checkSpecs,
  checkTime,
  checkTtl,
  refreshSlackMs,
  sessionExists,
  sessionFull,
} from './session-limits.ts';
import type {
  AccumulatorSpec,
  AddFactInput,
  AddFactResult,
  Aggregates,
  AggregatesAsOf,
  CreateSessionInput,
  FiredChange,
  RetractFactInput,
  RetractFactResult,
  SessionInfo,
  SessionSnapshot,
  SessionStore,
  SetFiredResult,
} from './session-store.ts';

export interface MemorySessionStoreOptions {
  /** Wall clock for TTL expiry (epoch ms); default Date.now. Event-time windows use each call's `now`. */
  readonly clock?: () => number;
}

interface FactRecord {
  readonly fact: unknown;
  /** The JSON the fact arrived as: an identical re-send is a duplicate, as in Redis. */
  readonly json: string;
  readonly eventTimeMs: number;
  readonly contributions: ReadonlyMap<string, number>;
}

interface Member {
  readonly factId: string;
  readonly eventTimeMs: number;
  readonly value: number;
}

interface AccumulatorState {
  count: number;
  sum: number;
  /** Fact ids currently counted, with their value. */
  readonly members: Map<string, Member>;
  /**
   * Members by event time (eviction), by smallest and by largest value (min, max), built when first needed. A removed
   * member stays in them until it reaches the top (lazy deletion: it is live only while `members` holds that object).
   */
  byTime: MinHeap<Member> | undefined;
  byLow: MinHeap<Member> | undefined;
  byHigh: MinHeap<Member> | undefined;
}

interface MemorySession {
  readonly id: string;
  readonly rulesetId: string;
  readonly createdAt: number;
  readonly ttlMs: number;
  expiresAt: number;
  /** Wall-clock deadline; the session is gone once the clock passes it. */
  deadline: number;
  version: number;
  fired: number[];
  firedVersion: number;
  /** Stored with the fired set by setFired. */
  aggregates: AggregatesAsOf | undefined;
  readonly facts: Map<string, FactRecord>;
  readonly accumulators: Map<string, AccumulatorState>;
  /** Per fact id, the fired-set change its applied add caused (setFired with a fact id). */
  readonly changes: Map<string, FiredChange>;
}

export class MemorySessionStore implements SessionStore {
  readonly #sessions = new Map<string, MemorySession>();
  readonly #clock: () => number;

  constructor(options: MemorySessionStoreOptions = {}) {
    this.#clock = options.clock ?? Date.now;
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
      version: 0,
      fired: [],
      firedVersion: 0,
      aggregates: undefined,
      facts: new Map(),
      accumulators: new Map(),
      changes: new Map(),
    };
    this.#sessions.set(input.id, session);
    return info(session);
  }

  async get(id: string): Promise<SessionSnapshot | undefined> {
    checkId('session id', id);
    const session = this.#live(id);
    if (!session) return undefined;
    const facts: Record<string, unknown> = {};
    for (const [factId, record] of session.facts) facts[factId] = structuredClone(record.fact);
    return {
      ...info(session),
      facts,
      firedRules: [...session.fired],
      version: session.version,
      aggregates: copyAggregates(session.aggregates),
    };
  }

  async delete(id: string): Promise<boolean> {
    checkId('session id', id);
    const existed = this.#live(id) !== undefined;
    this.#sessions.delete(id);
    return existed;
  }

  async addFact(id: string, input: AddFactInput): Promise<AddFactResult | undefined> {
    checkId('session id', id);
    checkId('fact id', input.factId);
    checkTime('eventTimeMs', input.eventTimeMs);
    checkTime('now', input.now);
    checkMaxFacts(input.maxFacts);
    const byId = checkSpecs(input.specs);
    checkContributions(input.contributions, byId);
    const factJson = JSON.stringify(input.fact);
    if (factJson === undefined) throw new AppError('VALIDATION_ERROR', 'The fact must be a JSON value.');
    const session = this.#live(id);
    if (!session) return undefined;
    const old = session.facts.get(input.factId);
    if (old?.json === factJson) {
      // A duplicate only evicts (time passed) and refreshes the TTL; nothing is applied again, the version stays.
      for (const spec of input.specs) evict(session, spec, input.now);
      this.#touch(session, input.now);
      const change = session.changes.get(input.factId);
      return {
        aggregates: aggregates(session, input.specs),
        factCount: session.facts.size,
        replaced: false,
        oldFact: undefined,
        version: session.version,
        duplicate: true,
        change: change && { activated: [...change.activated], deactivated: [...change.deactivated] },
      };
    }
    if (!old && session.facts.size >= input.maxFacts) throw sessionFull(id, input.maxFacts);

    for (const spec of input.specs) evict(session, spec, input.now);
    if (old) removeContributions(session, input.factId, old, byId);
    // The replaced fact's change no longer describes this fact; setFired stores the new one once it is applied.
    session.changes.delete(input.factId);
    const contributions = new Map(input.contributions.map((c) => [c.accumulatorId, c.value]));
    // A JSON round trip stores a copy, as Redis does, so later mutation by the caller changes nothing.
    session.facts.set(input.factId, { fact: JSON.parse(factJson), json: factJson, eventTimeMs: input.eventTimeMs, contributions });
    for (const [accumulatorId, value] of contributions) {
      const spec = byId.get(accumulatorId);
      if (!spec) continue;
      if (spec.windowMs !== undefined && input.eventTimeMs < input.now - spec.windowMs) continue;
      addMember(stateOf(session, accumulatorId), { factId: input.factId, eventTimeMs: input.eventTimeMs, value });
    }
    session.version += 1;
    this.#touch(session, input.now);
    return {
      aggregates: aggregates(session, input.specs),
      factCount: session.facts.size,
      replaced: old !== undefined,
      oldFact: old?.fact,
      version: session.version,
      duplicate: false,
      change: undefined,
    };
  }

  async retractFact(id: string, factId: string, input: RetractFactInput): Promise<RetractFactResult | undefined> {
    checkId('session id', id);
    checkId('fact id', factId);
    checkTime('now', input.now);
    const byId = checkSpecs(input.specs);
    const session = this.#live(id);
    if (!session) return undefined;
    for (const spec of input.specs) evict(session, spec, input.now);
    const old = session.facts.get(factId);
    if (old) {
      removeContributions(session, factId, old, byId);
      session.facts.delete(factId);
      session.changes.delete(factId);
      session.version += 1;
      this.#touch(session, input.now);
    }
    return {
      aggregates: aggregates(session, input.specs),
      factCount: session.facts.size,
      removed: old !== undefined,
      version: session.version,
    };
  }

  async setFired(
    id: string,
    fired: readonly number[],
    version: number,
    factId?: string,
    aggregates?: AggregatesAsOf,
  ): Promise<SetFiredResult | undefined> {
    checkId('session id', id);
    if (factId !== undefined) checkId('fact id', factId);
    if (aggregates !== undefined) checkAggregates(aggregates);
    if (!Number.isInteger(version) || version < 0) throw new AppError('VALIDATION_ERROR', 'version must be a non-negative integer.');
    const session = this.#live(id);
    if (!session) return undefined;
    const previous = [...session.fired];
    if (version <= session.firedVersion) return { previous, applied: false };
    session.fired = [...fired];
    session.firedVersion = version;
    session.aggregates = copyAggregates(aggregates);
    if (factId !== undefined) {
      const before = new Set(previous);
      const after = new Set(fired);
      session.changes.set(factId, {
        activated: fired.filter((rule) => !before.has(rule)),
        deactivated: previous.filter((rule) => !after.has(rule)),
      });
    }
    return { previous, applied: true };
  }

  async ping(): Promise<boolean> {
    return true;
  }

  async close(): Promise<void> {
    this.#sessions.clear();
  }

  #live(id: string): MemorySession | undefined {
    const session = this.#sessions.get(id);
    if (session && this.#clock() >= session.deadline) {
      this.#sessions.delete(id);
      return undefined;
    }
    return session;
  }

  // As in Redis: the expiry moves only once it has fallen more than ttl / 16 behind, so both stores report the same.
  #touch(session: MemorySession, now: number): void {
    if (now + session.ttlMs - session.expiresAt <= refreshSlackMs(session.ttlMs)) return;
    session.expiresAt = now + session.ttlMs;
    session.deadline = this.#clock() + session.ttlMs;
  }
}

function info(session: MemorySession): SessionInfo {
  return {
    id: session.id,
    rulesetId: session.rulesetId,
    createdAt: session.createdAt,
    expiresAt: session.expiresAt,
    factCount: session.facts.size,
  };
}

function copyAggregates(aggregates: AggregatesAsOf | undefined): AggregatesAsOf | undefined {
  return aggregates && { values: { ...aggregates.values }, asOf: aggregates.asOf };
}

function stateOf(session: MemorySession, accumulatorId: string): AccumulatorState {
  let state = session.accumulators.get(accumulatorId);
  if (!state) {
    state = { count: 0, sum: 0, members: new Map(), byTime: undefined, byLow: undefined, byHigh: undefined };
    session.accumulators.set(accumulatorId, state);
  }
  return state;
}

const earlier = (a: Member, b: Member): boolean => a.eventTimeMs < b.eventTimeMs;
const lower = (a: Member, b: Member): boolean => a.value < b.value;
const higher = (a: Member, b: Member): boolean => a.value > b.value;

function addMember(state: AccumulatorState, member: Member): void {
  state.members.set(member.factId, member);
  state.count += 1;
  state.sum += member.value;
  state.byTime?.push(member);
  state.byLow?.push(member);
  state.byHigh?.push(member);
  // Removed members pile up in the heaps; rebuilding once they outnumber the live ones keeps each add O(log n).
  const limit = 2 * state.members.size + 64;
  if ((state.byTime?.size ?? 0) > limit) state.byTime = new MinHeap(earlier, state.members.values());
  if ((state.byLow?.size ?? 0) > limit) state.byLow = new MinHeap(lower, state.members.values());
  if ((state.byHigh?.size ?? 0) > limit) state.byHigh = new MinHeap(higher, state.members.values());
}

/** The heap's first live member, dropping removed ones on the way. */
function liveTop(state: AccumulatorState, heap: MinHeap<Member>): Member | undefined {
  for (let top = heap.peek(); top !== undefined; top = heap.peek()) {
    if (state.members.get(top.factId) === top) return top;
    heap.pop();
  }
  return undefined;
}

function removeMember(state: AccumulatorState, factId: string): void {
  const member = state.members.get(factId);
  if (!member) return;
  state.members.delete(factId);
  state.count -= 1;
  // An empty accumulator starts again from exactly zero, as in Redis.
  state.sum = state.count === 0 ? 0 : state.sum - member.value;
}

function removeContributions(
  session: MemorySession,
  factId: string,
  record: FactRecord,
  specs: ReadonlyMap<string, AccumulatorSpec>,
): void {
  for (const accumulatorId of record.contributions.keys()) {
    const state = session.accumulators.get(accumulatorId);
    if (state && specs.has(accumulatorId)) removeMember(state, factId);
  }
}

function evict(session: MemorySession, spec: AccumulatorSpec, now: number): void {
  if (spec.windowMs === undefined) return;
  const state = session.accumulators.get(spec.id);
  if (!state) return;
  const cutoff = now - spec.windowMs;
  state.byTime ??= new MinHeap(earlier, state.members.values());
  // Oldest first: eviction stops at the first member inside the window.
  for (let oldest = liveTop(state, state.byTime); oldest !== undefined && oldest.eventTimeMs < cutoff; ) {
    state.byTime.pop();
    removeMember(state, oldest.factId);
    oldest = liveTop(state, state.byTime);
  }
}

function aggregates(session: MemorySession, specs: readonly AccumulatorSpec[]): Aggregates {
  const out: Aggregates = {};
  for (const spec of specs) {
    const state = session.accumulators.get(spec.id);
    let extreme: number | undefined;
    if (state && spec.fn === 'min') {
      state.byLow ??= new MinHeap(lower, state.members.values());
      extreme = liveTop(state, state.byLow)?.value;
    } else if (state && spec.fn === 'max') {
      state.byHigh ??= new MinHeap(higher, state.members.values());
      extreme = liveTop(state, state.byHigh)?.value;
    }
    out[spec.id] = aggregateValue(spec, { count: state?.count ?? 0, sum: state?.sum ?? 0, extreme });
  }
  return out;
}
