// One session's facts and running aggregates in process memory: the in-process store keeps its sessions in it, the
// Redis store caches them in it, so both answer every write the same way.
import { createHash } from 'node:crypto';
import { aggregateValue } from './aggregate-value.ts';
import { MinHeap } from './min-heap.ts';
import type { AccumulatorSpec, Aggregates } from './session-store.ts';
import { TimeQueue } from './time-queue.ts';

/** A fact as the working memory keeps it (and as Redis stores it: the JSON, and the contribution record). */
export interface StoredFact {
  /** The JSON the fact arrived as: an identical re-send is a duplicate. */
  readonly json: string;
  readonly eventTimeMs: number;
  /** [accumulator id, value] for every accumulator the fact contributed to when it was added. */
  readonly contributions: readonly (readonly [string, number])[];
  /**
   * The session version its add made (0: held before versions were stored with facts); set by the add when absent. Of
   * facts with the same event time, the lowest goes first to make room, in every copy whatever order it read them in.
   */
  readonly seq?: number;
}

export type AddOutcome =
  /** The fact id holds byte-identical JSON: nothing was applied (time still moved on). */
  | { readonly kind: 'duplicate' }
  /**
   * A new fact id while the session holds maxFacts facts, a fact past maxBytes of JSON with the others, or (`fact`) one
   * larger than maxBytes alone: nothing was applied.
   */
  | { readonly kind: 'full'; readonly by: FullBy }
  /**
   * `stored`: the fact as kept, its arrival time settled; `evicted`: the oldest facts that left to make room;
   * `forgotten`: facts the list of those let go no longer holds, nor the session (their changes may go).
   */
  | {
      readonly kind: 'added';
      readonly old: StoredFact | undefined;
      readonly stored: StoredFact;
      readonly evicted: readonly string[];
      readonly forgotten: readonly string[];
    };

/** What a refused add was over: the fact count, the session's bytes with it, or the byte allowance by itself. */
export type FullBy = 'facts' | 'bytes' | 'fact';

/** How an add settles what its fact alone does not say. */
export interface AddOptions {
  /** The fact's event time is its arrival: stamped with the watermark when that is later. */
  readonly arrival?: boolean;
  /** A full session lets its facts with the oldest event time go (each a retraction) instead of refusing the add. */
  readonly evictOldest?: boolean;
  /** Most characters of fact JSON the session may hold; no limit when absent. */
  readonly maxBytes?: number;
  /** A fact the store holds, applied to a copy catching up: never taken for the redelivery of one let go. */
  readonly known?: boolean;
}

/** One fact counted in one accumulator; it stops counting for good once `live` is false. */
interface Member {
  readonly state: AccumulatorState;
  readonly eventTimeMs: number;
  readonly value: number;
  live: boolean;
}

interface AccumulatorState {
  /** The spec the state was built for: a changed function or window rebuilds it from the facts. */
  readonly fn: AccumulatorSpec['fn'];
  readonly windowMs: number | undefined;
  /** Live members. */
  count: number;
  /**
   * Their sum exactly, as non-overlapping doubles smallest first (Shewchuk's partials, as Python's math.fsum): taking a
   * value back off leaves exactly what the rest add up to, and the order they came in never shows.
   */
  partials: number[];
  /** ±Infinity once the live members, added up in turns (#sumOf), are past the double range; 0 in range. */
  overflow: number;
  /**
   * Set when the partials cannot tell the sum: an addition passed the double range (perhaps only for the order values
   * came in), or a contribution was taken off, or one of the other sign added, while the sum was past it. Only adding
   * the live members up again in turns can tell; until then additions are not kept.
   */
  recount: boolean;
  /**
   * Members by event time (windowed accumulators: eviction), by smallest value (min) and by largest (max), built with
   * the state. A member that stopped counting stays in them until it reaches the front, or until they are rebuilt
   * without the dead.
   */
  byTime: TimeQueue<Member> | undefined;
  byLow: MinHeap<Member> | undefined;
  byHigh: MinHeap<Member> | undefined;
}

/**
 * A fact counts in an accumulator when it contributed to it and, for a windowed one, its event time is at least
 * `watermark - windowMs`, where the watermark is the latest `now` any write has brought: time never runs backwards in a
 * session. So the aggregates are a function of the facts, the specs and the watermark alone, and a working memory built
 * again from stored facts answers exactly as the one that was kept up to date write by write.
 */
/** A fact's JSON weighs one more fact in a cache for every this many characters: its heap grows with its text. */
export const FACT_WEIGHT_CHARACTERS = 4_096;

/**
 * Facts let go to make room that a session remembers (the latest): a redelivery of one of them (a Kafka run replayed
 * after a crash, up to two runs of 1,000 messages) answers as a duplicate instead of coming back as a new fact.
 */
export const LET_GO_LENGTH = 2_000;

/** Facts let go that weigh as much as one held fact in a cache of copies (about 130 bytes of heap each). */
const LET_GO_PER_WEIGHT = 16;

/** Tells a redelivered fact from a new one under the same id without keeping its JSON: 132 bits of its SHA-256. */
export function fingerprintOf(json: string): string {
  return createHash('sha256').update(json).digest('base64url').slice(0, 22);
}

/** One, plus one per FACT_WEIGHT_CHARACTERS of JSON: about 3 KB of heap a unit, as a typical cached fact takes. */
export function factWeight(fact: StoredFact): number {
  return 1 + Math.floor(fact.json.length / FACT_WEIGHT_CHARACTERS);
}

export class WorkingMemory {
  readonly facts: Map<string, StoredFact>;
  /** The facts' weight (factWeight summed). */
  #factsWeight = 0;
  /** Characters of the facts' JSON: what RULES_SESSION_MAX_BYTES bounds. */
  bytes = 0;
  /** Bumped by every applied add or retract. */
  version: number;
  /** Latest `now` of any write, epoch ms; -Infinity before the first. */
  watermark: number;
  readonly #states = new Map<string, AccumulatorState>();
  /** Per fact id, the members it counts as (one object per fact, not one map entry per fact and accumulator). */
  readonly #members = new Map<string, Member[]>();
  /** Facts let go to make room, oldest first: fact id -> fingerprint of its JSON (at most LET_GO_LENGTH). */
  readonly #letGo = new Map<string, string>();
  /** The states of the specs array last passed, in its order (callers pass the same array write after write). */
  #bound: { readonly specs: readonly AccumulatorSpec[]; readonly states: readonly AccumulatorState[] } | undefined;

  constructor(facts: Map<string, StoredFact> = new Map(), version = 0, watermark = Number.NEGATIVE_INFINITY) {
    this.facts = facts;
    this.version = version;
    this.watermark = watermark;
    for (const fact of facts.values()) {
      this.#factsWeight += factWeight(fact);
      this.bytes += fact.json.length;
    }
  }

  /** What a cache of copies bounds: the facts' weight, and one more for every LET_GO_PER_WEIGHT facts let go. */
  get weight(): number {
    return this.#factsWeight + Math.floor(this.#letGo.size / LET_GO_PER_WEIGHT);
  }

  /**
   * Adds or replaces a fact; contributions naming no spec are kept with the fact but count nowhere. An `arrival` fact
   * (its event time is when it arrived) is stamped with the watermark when that is later: a writer whose clock is behind
   * the session's would otherwise add a fact outside windows that end at the session's time. With `evictOldest`, a new
   * fact in a full session makes room by removing the facts with the oldest event time, each counted as a write.
   */
  add(
    factId: string,
    arriving: StoredFact,
    specs: readonly AccumulatorSpec[],
    now: number,
    maxFacts: number,
    options: AddOptions = {},
  ): AddOutcome {
    const old = this.facts.get(factId);
    let fact = arriving;
    // The same fact again, held or let go to make room since (a redelivery): nothing to apply. A fact the store holds
    // (`known`) is applied whatever the facts let go say: it came back after it was let go.
    const redelivered =
      old === undefined && options.known !== true && this.#letGo.size > 0 && this.#letGo.get(factId) === fingerprintOf(fact.json);
    if (old?.json === fact.json || redelivered) {
      this.#advance(specs, now);
      return { kind: 'duplicate' };
    }
    // Time moves on even for a refused add: every write that reaches the session brings its now.
    this.#advance(specs, now);
    const evicted: string[] = [];
    const forgotten: string[] = [];
    const maxBytes = options.maxBytes ?? Number.POSITIVE_INFINITY;
    // A fact larger than the whole allowance could not be held whatever left.
    if (fact.json.length > maxBytes) return { kind: 'full', by: 'fact' };
    const growth = fact.json.length - (old?.json.length ?? 0);
    const overFacts = old === undefined && this.facts.size >= maxFacts;
    if (overFacts || this.bytes + growth > maxBytes) {
      if (options.evictOldest !== true) return { kind: 'full', by: overFacts ? 'facts' : 'bytes' };
      if (overFacts) for (const oldest of this.#oldestFactIds(this.facts.size - maxFacts + 1)) this.#evict(oldest, evicted, forgotten);
      // Then the oldest of the others, one at a time, until the fact fits; the fact it replaces is not one of them.
      while (this.bytes + growth > maxBytes) {
        const [oldest] = this.#oldestFactIds(1, factId);
        if (oldest === undefined) break;
        this.#evict(oldest, evicted, forgotten);
      }
    }
    const eventTimeMs = options.arrival === true && fact.eventTimeMs < this.watermark ? this.watermark : fact.eventTimeMs;
    if (fact.seq === undefined || eventTimeMs !== fact.eventTimeMs) {
      // Spelled out rather than spread: one object shape for every held fact, and cheaper to make.
      fact = { json: fact.json, eventTimeMs, contributions: fact.contributions, seq: fact.seq ?? this.version + 1 };
    }
    if (old !== undefined) {
      this.#removeMembers(factId);
      this.#factsWeight -= factWeight(old);
      this.bytes -= old.json.length;
    }
    this.facts.set(factId, fact);
    this.#factsWeight += factWeight(fact);
    this.bytes += fact.json.length;
    const members: Member[] = [];
    for (const [accumulatorId, value] of fact.contributions) {
      const state = this.#states.get(accumulatorId);
      if (state !== undefined && this.#inWindow(state, fact.eventTimeMs)) {
        members.push(addMember(state, fact.eventTimeMs, value));
      }
    }
    if (members.length > 0) this.#members.set(factId, members);
    this.version += 1;
    // A fact forgotten and then let go again (or held again) within this add is still needed.
    const gone = forgotten.length === 0 ? forgotten : forgotten.filter((id) => !this.#letGo.has(id) && !this.facts.has(id));
    return { kind: 'added', old, stored: fact, evicted, forgotten: gone };
  }

  /**
   * The `count` facts with the oldest event times (of those tied, the first added: the lowest seq), made only when a
   * full session must make room: one scan for the usual one, one sort when a lowered limit leaves many to go.
   */
  #oldestFactIds(count: number, except?: string): string[] {
    if (count === 1) {
      let oldest: [string, StoredFact] | undefined;
      for (const entry of this.facts) {
        if (entry[0] !== except && (oldest === undefined || heldBefore(entry[1], oldest[1]))) oldest = entry;
      }
      return oldest === undefined ? [] : [oldest[0]];
    }
    const byTime = [...this.facts].sort(([, a], [, b]) => a.eventTimeMs - b.eventTimeMs || (a.seq ?? 0) - (b.seq ?? 0));
    return byTime.slice(0, count).map(([id]) => id);
  }

  /** Removes a fact and its contributions; undefined (nothing changed but time) when the session holds no such fact. */
  retract(factId: string, specs: readonly AccumulatorSpec[], now: number): StoredFact | undefined {
    this.#advance(specs, now);
    const old = this.facts.get(factId);
    if (old === undefined) return undefined;
    this.#remove(factId, old);
    return old;
  }

  /** Lets a fact go to make room (a write the add's call carries), remembering it among those let go. */
  #evict(factId: string, evicted: string[], forgotten: string[]): void {
    const fact = this.facts.get(factId) as StoredFact;
    this.#remove(factId, fact);
    evicted.push(factId);
    this.#letGo.delete(factId);
    this.#letGo.set(factId, fingerprintOf(fact.json));
    if (this.#letGo.size > LET_GO_LENGTH) {
      const [oldest] = this.#letGo.keys() as MapIterator<string>;
      this.#letGo.delete(oldest as string);
      forgotten.push(oldest as string);
    }
  }

  /** The fingerprint of a fact let go to make room; undefined for any other. */
  letGoFingerprint(factId: string): string | undefined {
    return this.#letGo.get(factId);
  }

  /** Takes the facts let go as a store lists them (oldest first), in place of those this copy knew of. */
  rememberLetGo(entries: Iterable<readonly [string, string]>): void {
    this.#letGo.clear();
    for (const [factId, fingerprint] of entries) {
      this.#letGo.delete(factId);
      this.#letGo.set(factId, fingerprint);
    }
    for (const factId of this.#letGo.keys()) {
      if (this.#letGo.size <= LET_GO_LENGTH) break;
      this.#letGo.delete(factId);
    }
  }

  /** Takes a held fact out with its contributions, its weight and its bytes: one more version. */
  #remove(factId: string, fact: StoredFact): void {
    this.#removeMembers(factId);
    this.facts.delete(factId);
    this.#factsWeight -= factWeight(fact);
    this.bytes -= fact.json.length;
    this.version += 1;
  }

  /** Value per spec id, as of the watermark (call after a write: the write moved time on and evicted). */
  aggregates(specs: readonly AccumulatorSpec[]): Aggregates {
    const out: Aggregates = {};
    const states = this.#statesOf(specs);
    for (let i = 0; i < specs.length; i += 1) {
      const spec = specs[i] as AccumulatorSpec;
      const state = states[i] as AccumulatorState;
      let extreme: number | undefined;
      if (spec.fn === 'min') {
        extreme = state.byLow && liveTop(state.byLow)?.value;
      } else if (spec.fn === 'max') {
        extreme = state.byHigh && liveTop(state.byHigh)?.value;
      }
      const sum = spec.fn === 'sum' || spec.fn === 'avg' ? this.#sumOf(state) : 0;
      out[spec.id] = aggregateValue(spec, { count: state.count, sum, extreme });
    }
    return out;
  }

  /**
   * The live members' sum. After an addition that passed the double range, or a change to a sum past it, it is added up
   * again from the live members: O(members), only around such values.
   */
  #sumOf(state: AccumulatorState): number {
    if (!state.recount || state.count === 0) return runningSum(state);
    const positive: number[] = [];
    const negative: number[] = [];
    for (const members of this.#members.values()) {
      for (const member of members) if (member.state === state && member.live) (member.value >= 0 ? positive : negative).push(member.value);
    }
    // In value order, so copies holding their facts in different orders add up alike (it matters at the range's end).
    positive.sort((a, b) => a - b);
    negative.sort((a, b) => b - a);
    // The sign that brings the running total back toward zero each time: every partial sum then lies between the
    // largest value and the total, so none passes the double range unless the total does, whatever the facts' order.
    state.partials = [];
    state.overflow = 0;
    state.recount = false;
    for (let p = 0, n = 0; state.overflow === 0 && (p < positive.length || n < negative.length); ) {
      const upward = n === negative.length || (p < positive.length && (state.partials.at(-1) ?? 0) <= 0);
      addToSum(state, upward ? (positive[p++] as number) : (negative[n++] as number), true);
    }
    return runningSum(state);
  }

  /** Moves the watermark to `now` when later, and evicts what every windowed accumulator's window left behind. */
  #advance(specs: readonly AccumulatorSpec[], now: number): void {
    if (now > this.watermark) this.watermark = now;
    for (const state of this.#statesOf(specs)) {
      if (state.windowMs !== undefined && state.byTime !== undefined) evict(state.byTime, this.watermark - state.windowMs);
    }
  }

  #statesOf(specs: readonly AccumulatorSpec[]): readonly AccumulatorState[] {
    const bound = this.#bound;
    if (bound !== undefined && bound.specs === specs) return bound.states;
    const unbuilt = specs.filter((spec) => {
      const existing = this.#states.get(spec.id);
      return existing === undefined || existing.fn !== spec.fn || existing.windowMs !== spec.windowMs;
    });
    if (unbuilt.length > 0) this.#build(unbuilt);
    const states = specs.map((spec) => this.#states.get(spec.id) as AccumulatorState);
    // States of accumulators these specs no longer name are let go: should such a spec come back, its state is built
    // again from the facts, so nothing keeps growing for rules that left the ruleset.
    const named = new Set(specs.map((spec) => spec.id));
    for (const id of this.#states.keys()) if (!named.has(id)) this.#states.delete(id);
    this.#bound = { specs, states };
    return states;
  }

  #inWindow(state: AccumulatorState, eventTimeMs: number): boolean {
    return state.windowMs === undefined || eventTimeMs >= this.watermark - state.windowMs;
  }

  /**
   * Builds the specs' running states from the facts, in one pass over them whatever the number of specs (a copy read
   * from Redis builds every state at once). A replaced state is simply let go: removing its members later changes only
   * that unreachable state.
   */
  #build(specs: readonly AccumulatorSpec[]): void {
    const building = new Map<string, { readonly state: AccumulatorState; readonly members: Member[] }>();
    for (const spec of specs) {
      const state: AccumulatorState = {
        fn: spec.fn,
        windowMs: spec.windowMs,
        count: 0,
        partials: [],
        overflow: 0,
        recount: false,
        byTime: undefined,
        byLow: undefined,
        byHigh: undefined,
      };
      building.set(spec.id, { state, members: [] });
    }
    for (const [factId, fact] of this.facts) {
      for (const [accumulatorId, value] of fact.contributions) {
        const built = building.get(accumulatorId);
        if (built === undefined || !this.#inWindow(built.state, fact.eventTimeMs)) continue;
        const member = addMember(built.state, fact.eventTimeMs, value);
        built.members.push(member);
        const list = this.#members.get(factId);
        if (list === undefined) this.#members.set(factId, [member]);
        else list.push(member);
      }
    }
    for (const [id, { state, members }] of building) {
      if (state.windowMs !== undefined) state.byTime = new TimeQueue(timeOf, members);
      if (state.fn === 'min') state.byLow = new MinHeap(lower, members);
      if (state.fn === 'max') state.byHigh = new MinHeap(higher, members);
      this.#states.set(id, state);
    }
  }

  #removeMembers(factId: string): void {
    const members = this.#members.get(factId);
    if (members === undefined) return;
    for (const member of members) removeMember(member);
    this.#members.delete(factId);
  }
}

/** Whether `a` leaves before `b` to make room: an older event time, or the same one and added first. */
function heldBefore(a: StoredFact, b: StoredFact): boolean {
  return a.eventTimeMs < b.eventTimeMs || (a.eventTimeMs === b.eventTimeMs && (a.seq ?? 0) < (b.seq ?? 0));
}

const timeOf = (member: Member): number => member.eventTimeMs;
const lower = (a: Member, b: Member): boolean => a.value < b.value;
const higher = (a: Member, b: Member): boolean => a.value > b.value;

const isLive = (member: Member): boolean => member.live;

function addMember(state: AccumulatorState, eventTimeMs: number, value: number): Member {
  const member: Member = { state, eventTimeMs, value, live: true };
  state.count += 1;
  addToSum(state, value);
  state.byTime?.push(member);
  state.byLow?.push(member);
  state.byHigh?.push(member);
  // Dead members pile up in the orders; rebuilding once they outnumber the live ones keeps each add O(log n).
  const limit = 2 * state.count + 64;
  if ((state.byTime?.size ?? 0) > limit) state.byTime = new TimeQueue(timeOf, (state.byTime as TimeQueue<Member>).values().filter(isLive));
  if ((state.byLow?.size ?? 0) > limit) state.byLow = new MinHeap(lower, (state.byLow as MinHeap<Member>).values().filter(isLive));
  if ((state.byHigh?.size ?? 0) > limit) state.byHigh = new MinHeap(higher, (state.byHigh as MinHeap<Member>).values().filter(isLive));
  return member;
}

/** The first live member of a heap or queue, dropping dead ones on the way. */
function liveTop(order: MinHeap<Member> | TimeQueue<Member>): Member | undefined {
  for (let top = order.peek(); top !== undefined; top = order.peek()) {
    if (top.live) return top;
    order.pop();
  }
  return undefined;
}

function removeMember(member: Member): void {
  if (!member.live) return;
  member.live = false;
  const state = member.state;
  state.count -= 1;
  if (state.count === 0) {
    state.partials.length = 0;
    state.overflow = 0;
    state.recount = false;
  } else addToSum(state, -member.value);
}

/**
 * Adds a value to the exact sum. An addition past the double range leaves the sum to be added up again; `inTurns` (that
 * adding up) knows the total is past it then, and only its sign is kept.
 */
function addToSum(state: AccumulatorState, value: number, inTurns = false): void {
  if (state.recount) return;
  if (state.overflow !== 0) {
    if (value !== 0 && Math.sign(value) !== Math.sign(state.overflow)) state.recount = true;
    return;
  }
  let total: number;
  if (Math.abs(value) < LARGE) total = grow(state.partials, value);
  else {
    // Taken smallest first, a value near the end of the range could pass it with a partial of the same sign
    // (MAX + 2^970) where the sum does not: the partials go largest first onto it instead.
    const partials = state.partials;
    state.partials = [];
    total = grow(state.partials, value);
    for (let i = partials.length - 1; i >= 0 && Number.isFinite(total); i -= 1) total = grow(state.partials, partials[i] as number);
  }
  if (Number.isFinite(total)) return;
  if (inTurns) state.overflow = total;
  else state.recount = true;
}

/** Values from which an addition may pass the double range on its way (2^1022, a quarter of it). */
const LARGE = 2 ** 1022;

/** Shewchuk's grow-expansion: adds `value` to the partials exactly; answers the largest, non-finite past the range. */
function grow(partials: number[], value: number): number {
  let x = value;
  let kept = 0;
  for (let i = 0; i < partials.length; i += 1) {
    let y = partials[i] as number;
    if (Math.abs(x) < Math.abs(y)) {
      const larger = y;
      y = x;
      x = larger;
    }
    const hi = x + y;
    const lo = y - (hi - x);
    if (lo !== 0) partials[kept++] = lo;
    x = hi;
  }
  // A zero total is no partial: the last one, when any, is then the largest and carries the sum's sign.
  if (Number.isFinite(x) && x !== 0) partials[kept++] = x;
  if (partials.length !== kept) partials.length = kept;
  return x;
}

/**
 * The exact sum rounded once to the nearest double (ties to even), as math.fsum rounds it; ±Infinity past the range,
 * even by less than the half unit that rounding would take back to the largest double, so every copy answers alike.
 */
function runningSum(state: AccumulatorState): number {
  if (state.overflow !== 0) return state.overflow;
  const partials = state.partials;
  let n = partials.length;
  if (n === 0) return 0;
  n -= 1;
  let hi = partials[n] as number;
  if (Math.abs(hi) === Number.MAX_VALUE && n > 0 && Math.sign(partials[n - 1] as number) === Math.sign(hi))
    return hi * Number.POSITIVE_INFINITY;
  let lo = 0;
  while (n > 0) {
    const x = hi;
    n -= 1;
    const y = partials[n] as number;
    hi = x + y;
    lo = y - (hi - x);
    if (lo !== 0) break;
  }
  // Half-way cases: the partials below decide which way the rounding of hi + lo must go.
  if (n > 0 && ((lo < 0 && (partials[n - 1] as number) < 0) || (lo > 0 && (partials[n - 1] as number) > 0))) {
    const y = lo * 2;
    const x = hi + y;
    if (y === x - hi) hi = x;
  }
  return hi;
}

/** Removes every member older than the cutoff, oldest first: eviction stops at the first member inside the window. */
function evict(byTime: TimeQueue<Member>, cutoff: number): void {
  for (let oldest = liveTop(byTime); oldest !== undefined && oldest.eventTimeMs < cutoff; oldest = liveTop(byTime)) {
    byTime.pop();
    removeMember(oldest);
  }
}
