// Working memory in Redis, cached per session in process memory: Redis holds the facts and every write, so any instance
// can serve any session; the cache spares each write reading or recomputing the working memory in Redis.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis, type RedisOptions } from 'ioredis';
import { AppError } from '../errors.ts';
import { within } from '../within.ts';
import { contributionRecord, parseContributionRecord } from './contribution-record.ts';
import { aggregatesJson, firedChange, storedAggregate } from './fired-change.ts';
import { legacySessionKeys, SESSION_LOG_LENGTH, sessionKeys } from './keys.ts';
import { LUA_SCRIPTS, type LuaScriptName } from './lua-scripts.ts';
import { SESSION_STORE_UNAVAILABLE, toSessionStoreError } from './redis-errors.ts';
import { checkAddFact, checkId, checkRetractFact, checkTime, checkTtl, sessionExists, sessionFull } from './session-limits.ts';
import {
  type AccumulatorSpec,
  type AddFactInput,
  type AddFactResult,
  type Aggregates,
  type AggregatesAsOf,
  type CreateSessionInput,
  type FiredChange,
  NewerRulesError,
  type RetractFactInput,
  type RetractFactResult,
  type SessionInfo,
  type SessionSnapshot,
  type SessionStore,
} from './session-store.ts';
import { factWeight, LET_GO_LENGTH, type StoredFact, WorkingMemory } from './working-memory.ts';
import { WriteFrequency } from './write-frequency.ts';

export interface RedisSessionStoreOptions {
  /** redis:// or rediss:// URL. */
  readonly url: string;
  /** Prepended to every key, e.g. `rules:`; tests use a unique one per run. */
  readonly keyPrefix?: string;
  /** How long to wait for the first connection before answering UNAVAILABLE; default 2000 ms. */
  readonly connectTimeoutMs?: number;
  /**
   * How long a command may go unanswered before it fails as UNAVAILABLE; default DEFAULT_COMMAND_TIMEOUT_MS. Without it a
   * Redis that stops answering but keeps the connection open holds every session call until TCP gives up.
   */
  readonly commandTimeoutMs?: number;
  /** Connection errors as they happen (ioredis reconnects by itself); default: ignored. */
  readonly onError?: (error: Error) => void;
  /** The connection is ready again after it was lost, so an operator sees the end of an outage, not only its errors. */
  readonly onReconnect?: () => void;
  /**
   * Facts the session cache may hold (each cached session counts one more, a fact of long JSON one more per 4 KB of it:
   * factWeight); default DEFAULT_CACHE_FACTS.
   */
  readonly cacheFacts?: number;
}

export const DEFAULT_CACHE_FACTS = 100_000;
export const DEFAULT_COMMAND_TIMEOUT_MS = 5_000;

/** What the cache of working-memory copies holds and how often it missed, since the store opened. */
export interface SessionCacheStats {
  /** Sessions with a cached copy. */
  readonly sessions: number;
  /** Facts in those copies, by weight (factWeight: a fact of long JSON counts once per 4 KB of it). */
  readonly facts: number;
  /** Sessions read whole from Redis into a new copy (no copy, or one too far behind to catch up). */
  readonly reads: number;
  /** Of those reads, the ones not kept: the cache was full of copies written more often. */
  readonly readsLetGo: number;
}

/** Writes that lost to another instance are worked out again on a fresh copy at most this many times. */
const MAX_ATTEMPTS = 50;

type ScriptCommand = (numberOfKeys: number, ...args: (string | number)[]) => Promise<unknown>;

/** What a write learns from write-session.lua: applied (with a touch's stored change), gone, or to be worked out again. */
type WriteReply =
  | { readonly status: 'OK'; readonly stored: string }
  | { readonly status: 'NOT_FOUND' | 'RETRY' }
  | { readonly status: 'RULES'; readonly revision: number };

/** One write of a call: its script arguments, what it leaves stored (add, retract), and how to answer its caller. */
interface PendingWrite {
  readonly args: readonly string[];
  readonly stores: { readonly fired: readonly number[]; readonly aggregates: Aggregates } | undefined;
  readonly specs: readonly AccumulatorSpec[];
  /** The rules revision it was evaluated under (undefined: no check). */
  readonly revision: number | undefined;
  readonly resolve: (reply: WriteReply) => void;
  readonly reject: (error: unknown) => void;
}

/** What a write was worked out with: the session's accumulators and the rules revision that evaluated it. */
type Evaluated = Pick<AddFactInput, 'specs' | 'revision'>;

/** Script arguments per write (write-session.lua). */
const WRITE_ARGS = 7;

/**
 * Pending writes (over all sessions) that leave at once instead of at the end of the tick. A busy tick's writes then go
 * out in several groups, and Redis applies the first while this instance still works out the rest: with 16 adds in
 * flight on one session, groups of 8 served 1.5-2x the adds a second of one group per tick (client and Redis took
 * turns), and more than groups of 4 or 16.
 */
export const WRITES_PER_GROUP = 8;

/** This instance's copy of one session's working memory, as of the write that stored `stamp`. */
interface CachedSession {
  readonly memory: WorkingMemory;
  /** The stamp of the latest write applied to the copy: the next write builds on it. */
  stamp: string;
  /** The fired set stored with that write. */
  fired: readonly number[];
  /** Writes of this copy not answered yet: on the wire, or waiting in `pending`. */
  inFlight: number;
  /** Writes worked out since the last call went out, sent together in one call at the end of the tick. */
  pending: PendingWrite[];
  /** The copy's stamp before the first pending write: the stamp that call names. */
  base: string;
  /** The copy's watermark once the first pending write was worked out: a stored one ahead of it makes the call BEHIND. */
  baseWatermark: number;
  /** write-session.lua's keys. */
  readonly keys: readonly string[];
}

/** How long closing waits for Redis to answer QUIT before it drops the connection. */
const QUIT_WAIT_MS = 1_000;

/** Options that make commands fail fast while Redis is away and reconnect forever in the background. */
export function sessionRedisOptions(connectTimeoutMs: number, commandTimeoutMs = DEFAULT_COMMAND_TIMEOUT_MS): RedisOptions {
  return {
    enableOfflineQueue: false,
    // A timed-out command stays in ioredis's queue, so a late reply still pairs with it and the next ones stay in step;
    // like a lost reply, it drops the session's copy, and the next write reads the session back after it.
    commandTimeout: commandTimeoutMs,
    // Commands on the wire fail when the connection drops, never sent again: a write whose reply was lost may have been
    // applied, and sent again it would be answered as another's (a retraction as absent, a create as taken).
    maxRetriesPerRequest: 0,
    connectTimeout: connectTimeoutMs,
    retryStrategy: (attempt) => Math.min(attempt * 100, 2000),
  };
}

/** Connects (waiting at most connectTimeoutMs for the first connection, never failing) and loads the scripts. */
export async function openRedisSessionStore(options: RedisSessionStoreOptions): Promise<RedisSessionStore> {
  const timeout = options.connectTimeoutMs ?? 2000;
  const client = new Redis(options.url, sessionRedisOptions(timeout, options.commandTimeoutMs));
  const selection = watchDatabaseSelection(client);
  client.on('error', (error: Error) => options.onError?.(error));
  let lost = false;
  client.on('close', () => {
    lost = true;
  });
  client.on('ready', () => {
    if (lost) options.onReconnect?.();
    lost = false;
  });
  const ready = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), timeout);
    client.once('ready', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
  const refused = selection();
  if (ready && refused !== undefined) {
    client.disconnect();
    throw new Error(refused);
  }
  return new RedisSessionStore(client, options.keyPrefix ?? '', {
    databaseRefused: selection,
    ...(options.cacheFacts === undefined ? {} : { cacheFacts: options.cacheFacts }),
  });
}

/**
 * Whether the server refused the database REDIS_URL names on the current connection (a message saying so), else
 * undefined. ioredis reports such a connection ready anyway and works in database 0, another one's keys; it says so only
 * by an error event for its SELECT, which comes before `ready`. Watched from before the first connection.
 */
export function watchDatabaseSelection(client: Redis): () => string | undefined {
  let refused: string | undefined;
  client.on('connect', () => {
    refused = undefined;
  });
  client.on('error', (error: Error) => {
    if ((error as { command?: { name?: unknown } }).command?.name === 'select') {
      refused = `REDIS_URL names database ${client.options.db ?? 0}, which this Redis server refuses: ${error.message}`;
    }
  });
  return () => refused;
}

export class RedisSessionStore implements SessionStore {
  readonly #client: Redis;
  readonly #prefix: string;
  readonly #cacheFacts: number;
  /** Why every call fails UNAVAILABLE: the server refused REDIS_URL's database on this connection (see watchDatabaseSelection). */
  readonly #databaseRefused: () => string | undefined;
  /** Cached sessions, least recently used first. */
  readonly #cache = new Map<string, CachedSession>();
  /** Facts in the cache, plus one per cached session. */
  #cachedWeight = 0;
  /** Reads of sessions under way, so writes that find no copy share one. */
  readonly #loading = new Map<string, Promise<CachedSession | undefined>>();
  /**
   * Copies read but not admitted, kept while writes of theirs are in flight: writes that overlap share one read instead
   * of reading the session again each, beyond the cache's bound for as long as they last.
   */
  readonly #letGo = new Map<string, CachedSession>();
  /** Writes per session lately: which copies earn a place in a full cache. */
  readonly #frequency = new WriteFrequency();
  /** Stamps are this instance's random prefix and a counter, so no two writes anywhere store the same one. */
  readonly #stampPrefix = randomBytes(9).toString('base64url');
  /** Sessions with writes pending, flushed together at the end of the tick or once WRITES_PER_GROUP are pending. */
  #toFlush: [string, CachedSession][] = [];
  /** Writes pending in the sessions of #toFlush. */
  #pendingWrites = 0;
  #stampCounter = 0;
  #reads = 0;
  #readsLetGo = 0;

  /** Takes ownership of the client: close() quits it. */
  constructor(
    client: Redis,
    keyPrefix: string,
    options: { readonly cacheFacts?: number; readonly databaseRefused?: () => string | undefined } = {},
  ) {
    this.#client = client;
    this.#databaseRefused = options.databaseRefused ?? (() => undefined);
    this.#prefix = keyPrefix;
    this.#cacheFacts = options.cacheFacts ?? DEFAULT_CACHE_FACTS;
    for (const [name, lua] of Object.entries(LUA_SCRIPTS)) {
      // defineCommand sends EVALSHA and falls back to EVAL when the server lost the script cache.
      client.defineCommand(name, { lua });
    }
  }

  async create(input: CreateSessionInput): Promise<SessionInfo> {
    checkId('session id', input.id);
    checkId('ruleset id', input.rulesetId);
    checkTtl(input.ttlSeconds);
    checkTime('now', input.now);
    const ttlMs = input.ttlSeconds * 1000;
    const keys = sessionKeys(this.#prefix, input.id);
    const created = await this.#run(
      'sessionCreate',
      [keys.meta, keys.log, keys.facts, keys.contributions, keys.changes, keys.letGo, keys.letGoPrints],
      [input.rulesetId, String(input.now), String(input.now + ttlMs), String(ttlMs), this.#nextStamp()],
    );
    if (created !== 1) throw sessionExists(input.id);
    return { id: input.id, rulesetId: input.rulesetId, createdAt: input.now, expiresAt: input.now + ttlMs, factCount: 0 };
  }

  async get(id: string): Promise<SessionSnapshot | undefined> {
    checkId('session id', id);
    const keys = sessionKeys(this.#prefix, id);
    const replies = await this.#guard(() => this.#client.multi().hgetall(keys.meta).hgetall(keys.facts).exec());
    const meta = replyValue(replies?.[0]);
    const facts = replyValue(replies?.[1]);
    if (!isStringRecord(meta) || !isStringRecord(facts) || meta.ruleset_id === undefined) return undefined;
    // fromEntries defines own properties, so a fact id such as `__proto__` is a fact like any other.
    const parsedFacts = Object.fromEntries(Object.entries(facts).map(([factId, json]) => [factId, JSON.parse(json)]));
    return {
      id,
      rulesetId: meta.ruleset_id,
      createdAt: Number(meta.created_at),
      expiresAt: Number(meta.expires_at),
      factCount: Object.keys(parsedFacts).length,
      facts: parsedFacts,
      firedRules: parseFired(meta.fired ?? '[]'),
      version: Number(meta.version ?? 0),
      aggregates: parseAggregates(meta.aggregates, meta.aggregates_at),
    };
  }

  async delete(id: string): Promise<boolean> {
    checkId('session id', id);
    const keys = sessionKeys(this.#prefix, id);
    const legacy = legacySessionKeys(this.#prefix, id);
    this.#forget(id);
    this.#frequency.forget(id);
    return this.#guard(async () => {
      const accumulatorIds = await this.#client.smembers(legacy.accumulators);
      // All keys share the `{id}` hash tag, so one multi-key DEL is cluster-safe.
      const deleted = await this.#client.del(
        keys.meta,
        keys.facts,
        keys.contributions,
        keys.changes,
        keys.log,
        keys.letGo,
        keys.letGoPrints,
        legacy.totals,
        legacy.accumulators,
        ...accumulatorIds.flatMap(legacy.perAccumulator),
      );
      return deleted > 0;
    });
  }

  async addFact(id: string, input: AddFactInput): Promise<AddFactResult | undefined> {
    const fact = checkAddFact(id, input);
    return this.#apply<AddFactResult>(id, (session) => {
      const { memory } = session;
      const before = memory.weight;
      const outcome = memory.add(input.factId, fact, input.specs, input.now, input.maxFacts, {
        arrival: input.arrival === true,
        evictOldest: input.evictOldest === true,
        ...(input.maxBytes === undefined ? {} : { maxBytes: input.maxBytes }),
      });
      const aggregates = memory.aggregates(input.specs);
      // Read now: later writes may change the copy while this one is on the wire.
      const { version } = memory;
      const factCount = memory.facts.size;
      if (outcome.kind !== 'added') {
        // A full session or a duplicate changes nothing, but only a copy known to be current may say so.
        const kind = outcome.kind === 'full' ? 'check' : 'touch';
        return {
          reply: this.#send(id, session, input, [kind, String(input.now), input.factId]),
          answer: (stored: string): AddFactResult => {
            if (outcome.kind === 'full') throw sessionFull(id, input, outcome.by);
            const change = stored === '' ? { activated: [], deactivated: [] } : parseChange(stored);
            return { aggregates, factCount, replaced: false, version, duplicate: true, change };
          },
        };
      }
      const fired = this.#fire(id, session, input.fire, aggregates);
      const change = firedChange(session.fired, fired);
      this.#weigh(id, session, memory.weight - before);
      const extra = [fact.json, contributionRecord(outcome.stored), JSON.stringify(change)];
      const { old } = outcome;
      // The facts that made room leave in the same script call as the add (held back from a group of their own), so
      // Redis applies all or none of them; the add's reply answers for them.
      for (const evicted of outcome.evicted) {
        const fingerprint = memory.letGoFingerprint(evicted) ?? '';
        this.#write(id, session, input, 'evict', input.now, evicted, fired, aggregates, [fingerprint], true).catch(() => undefined);
      }
      return {
        reply: this.#write(id, session, input, 'add', input.now, input.factId, fired, aggregates, extra),
        answer: (): AddFactResult => ({
          aggregates,
          factCount,
          replaced: old !== undefined,
          version,
          duplicate: false,
          change,
        }),
      };
    });
  }

  async retractFact(id: string, factId: string, input: RetractFactInput): Promise<RetractFactResult | undefined> {
    checkRetractFact(id, factId, input);
    return this.#apply<RetractFactResult>(id, (session) => {
      const { memory } = session;
      const removed = memory.retract(factId, input.specs, input.now);
      const aggregates = memory.aggregates(input.specs);
      const { version } = memory;
      const factCount = memory.facts.size;
      if (removed === undefined) {
        return {
          reply: this.#send(id, session, input, ['check', String(input.now), factId]),
          answer: () => ({ aggregates, factCount, removed: false, version, change: { activated: [], deactivated: [] } }),
        };
      }
      const fired = this.#fire(id, session, input.fire, aggregates);
      const change = firedChange(session.fired, fired);
      this.#weigh(id, session, -factWeight(removed));
      return {
        reply: this.#write(id, session, input, 'retract', input.now, factId, fired, aggregates, []),
        answer: () => ({ aggregates, factCount, removed: true, version, change }),
      };
    });
  }

  cacheStats(): SessionCacheStats {
    const sessions = this.#cache.size;
    return { sessions, facts: this.#cachedWeight - sessions, reads: this.#reads, readsLetGo: this.#readsLetGo };
  }

  async ping(): Promise<boolean> {
    if (this.#databaseRefused() !== undefined) return false;
    try {
      return (await this.#client.ping()) === 'PONG';
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    this.#cache.clear();
    this.#letGo.clear();
    this.#cachedWeight = 0;
    // QUIT lets replies on the wire arrive; a Redis that does not answer it soon (frozen, a network away) is left, or a
    // shutdown would wait the whole REDIS_COMMAND_TIMEOUT on an idle connection.
    const quit = this.#client.quit().then(
      () => true,
      () => false,
    );
    if ((await within(quit, QUIT_WAIT_MS))?.value !== true) this.#client.disconnect();
  }

  /**
   * Works a write out on the session's copy (`work` applies it and queues it in one synchronous step) until Redis takes
   * it, then answers with what the accepted attempt worked out; undefined when the session is gone.
   */
  async #apply<T>(
    id: string,
    work: (session: CachedSession) => { reply: Promise<WriteReply>; answer: (stored: string) => T },
  ): Promise<T | undefined> {
    this.#frequency.count(id);
    for (let attempt = 1; ; attempt += 1) {
      const session = this.#cache.get(id) ?? this.#letGo.get(id) ?? (await this.#read(id));
      if (session === undefined) return undefined;
      const { reply, answer } = work(session);
      const written = await reply;
      if (written.status === 'NOT_FOUND') return undefined;
      if (written.status === 'OK') return answer(written.stored);
      // The copy went with the refused call; the caller evaluates again under the newer rules.
      if (written.status === 'RULES') throw new NewerRulesError(written.revision);
      await backOff(id, attempt);
    }
  }

  /** The session read into a new copy; writes that find no copy while a read is under way share it. */
  #read(id: string): Promise<CachedSession | undefined> {
    let loading = this.#loading.get(id);
    if (loading === undefined) {
      loading = this.#load(id).finally(() => this.#loading.delete(id));
      this.#loading.set(id, loading);
    }
    return loading;
  }

  /** Reads the session's facts, contribution records and stamp in one step (read-session.lua) and caches the working memory. */
  async #load(id: string): Promise<CachedSession | undefined> {
    const keys = sessionKeys(this.#prefix, id);
    const reply = asArray(
      await this.#run('sessionRead', [keys.meta, keys.facts, keys.contributions, keys.letGo, keys.letGoPrints], []),
    ) as string[];
    if (reply.length < 6) return undefined;
    const facts = new Map<string, StoredFact>();
    for (let i = FACTS_FROM; i + 2 < reply.length; i += 3) {
      facts.set(reply[i] as string, storedFact(reply[i + 1] as string, reply[i + 2] || undefined));
    }
    const [, stamp, version, watermark, fired, letGo] = reply;
    const memory = new WorkingMemory(facts, Number(version || 0), watermark ? Number(watermark) : Number.NEGATIVE_INFINITY);
    memory.rememberLetGo(parseLetGo(letGo ?? ''));
    const session: CachedSession = {
      memory,
      stamp: stamp ?? '',
      fired: parseFired(fired || '[]'),
      inFlight: 0,
      pending: [],
      base: '',
      baseWatermark: Number.NEGATIVE_INFINITY,
      keys: [keys.meta, keys.facts, keys.contributions, keys.changes, keys.log, keys.letGo, keys.letGoPrints],
    };
    this.#forget(id);
    this.#reads += 1;
    // Not admitted: this read serves the writes waiting for it, and those that come while any is in flight, and is let
    // go; the copies written more often stay.
    if (!this.#admits(id, session.memory.weight + 1)) {
      this.#readsLetGo += 1;
      this.#letGo.set(id, session);
      return session;
    }
    this.#cache.set(id, session);
    this.#weigh(id, session, session.memory.weight + 1);
    return session;
  }

  /**
   * Whether a copy of `weight` may take its place in the cache: yes when it fits, else only when it was written more
   * often lately than every copy it would push out (least recently written first). Dropping the least recently written
   * whatever comes in reads every session back at every write once more sessions take turns than fit (TinyLFU's idea).
   */
  #admits(id: string, weight: number): boolean {
    let over = this.#cachedWeight + weight - this.#cacheFacts;
    const frequency = this.#frequency.of(id);
    for (const [cachedId, cached] of this.#cache) {
      if (over <= 0) break;
      if (this.#frequency.of(cachedId) >= frequency) return false;
      over -= cached.memory.weight + 1;
    }
    return true;
  }

  /** Calls `fire`; a throw leaves the copy ahead of Redis, so it is dropped. */
  #fire(id: string, session: CachedSession, fire: (aggregates: Aggregates) => readonly number[], aggregates: Aggregates) {
    try {
      return fire(aggregates);
    } catch (error) {
      this.#forget(id, session);
      throw error;
    }
  }

  /** Sends an add or retract already applied to the copy, with a fresh stamp the copy then holds. */
  #write(
    id: string,
    session: CachedSession,
    under: Evaluated,
    kind: 'add' | 'retract' | 'evict',
    now: number,
    factId: string,
    fired: readonly number[],
    aggregates: Aggregates,
    extra: readonly string[],
    hold = false,
  ): Promise<WriteReply> {
    const stamp = this.#nextStamp();
    const sent = this.#send(id, session, under, [kind, String(now), factId, stamp, ...extra], { fired, aggregates }, hold);
    session.stamp = stamp;
    session.fired = fired;
    return sent;
  }

  /**
   * Queues a write for the call that goes out at the end of this tick, with every other write of this session's copy
   * worked out meanwhile: one script call (and one round trip) for all of them, unless WRITES_PER_GROUP writes are
   * pending first.
   */
  #send(
    id: string,
    session: CachedSession,
    under: Evaluated,
    args: readonly string[],
    stores?: PendingWrite['stores'],
    hold = false,
  ): Promise<WriteReply> {
    return new Promise<WriteReply>((resolve, reject) => {
      if (session.pending.length === 0) {
        session.base = session.stamp;
        session.baseWatermark = session.memory.watermark;
        if (this.#toFlush.length === 0) process.nextTick(this.#flushAll);
        this.#toFlush.push([id, session]);
      }
      session.pending.push({ args, stores, specs: under.specs, revision: under.revision, resolve, reject });
      session.inFlight += 1;
      this.#pendingWrites += 1;
      // `hold`: the write must leave in the same call as the one queued after it.
      if (!hold && this.#pendingWrites >= WRITES_PER_GROUP) this.#flushAll();
    });
  }

  /** Sends every session's pending writes; the socket is corked meanwhile, so the calls leave in one system call. */
  readonly #flushAll = (): void => {
    const sessions = this.#toFlush;
    this.#toFlush = [];
    this.#pendingWrites = 0;
    const stream = this.#client.stream as Redis['stream'] | undefined;
    stream?.cork();
    try {
      for (const [id, session] of sessions) void this.#flush(id, session);
    } finally {
      stream?.uncork();
    }
  };

  /**
   * Sends the pending writes in one call naming the stamp before the first. Refused (STALE, or BEHIND while other
   * writes of the copy are still unanswered): the copy is dropped; BEHIND otherwise brings it up to date. Either way
   * each write is then worked out again.
   */
  async #flush(id: string, session: CachedSession): Promise<void> {
    const batch = session.pending;
    session.pending = [];
    // Redis keeps the fired set and aggregates only as the last add or retract of the call left them.
    const stores = batch.findLast((write) => write.stores !== undefined)?.stores;
    const args = [
      session.base,
      String(SESSION_LOG_LENGTH),
      stores === undefined ? '' : JSON.stringify(stores.fired),
      stores === undefined ? '' : aggregatesJson(stores.aggregates),
      Number.isFinite(session.baseWatermark) ? String(session.baseWatermark) : '',
      ...revisionRange(batch),
      String(LET_GO_LENGTH),
    ];
    for (const write of batch) {
      args.push(...write.args);
      for (let i = write.args.length; i < WRITE_ARGS; i += 1) args.push('');
    }
    let answers: WriteReply[];
    try {
      const reply = asArray(await this.#run('sessionWrite', session.keys as string[], args)) as string[];
      const unanswered = session.inFlight;
      if (reply[0] === 'OK') {
        answers = batch.map((_, i) => ({ status: 'OK', stored: reply[i + 1] ?? '' }));
      } else {
        if (reply[0] === 'BEHIND' && unanswered === batch.length && this.#holds(id, session)) {
          this.#catchUp(id, session, reply, batch[0]?.specs ?? []);
        } else {
          this.#forget(id, session);
        }
        const refused: WriteReply =
          reply[0] === 'NOT_FOUND'
            ? { status: 'NOT_FOUND' }
            : reply[0] === 'RULES'
              ? { status: 'RULES', revision: Number(reply[1]) }
              : { status: 'RETRY' };
        answers = batch.map(() => refused);
      }
    } catch (error) {
      // Unreachable Redis, or an answer this copy cannot apply: the copy goes, every write of the call fails.
      this.#forget(id, session);
      session.inFlight -= batch.length;
      for (const write of batch) write.reject(error);
      return;
    }
    session.inFlight -= batch.length;
    if (session.inFlight === 0 && this.#letGo.get(id) === session) this.#letGo.delete(id);
    batch.forEach((write, i) => {
      write.resolve(answers[i] as WriteReply);
    });
  }

  /** Applies what other writers changed (write-session.lua's BEHIND answer) to the copy, which then holds their stamp. */
  #catchUp(id: string, session: CachedSession, reply: string[], specs: readonly AccumulatorSpec[]): void {
    const { memory } = session;
    const before = memory.weight;
    const watermark = reply[3] === '' || reply[3] === undefined ? memory.watermark : Math.max(memory.watermark, Number(reply[3]));
    for (let i = FACTS_FROM; i + 2 < reply.length; i += 3) {
      const factId = reply[i] as string;
      const json = reply[i + 1] ?? '';
      // Redis's record replaces the copy's even for the same JSON: the copy may have worked it out at another event time.
      memory.retract(factId, specs, watermark);
      if (json !== '') {
        memory.add(factId, storedFact(json, reply[i + 2] || undefined), specs, watermark, Number.POSITIVE_INFINITY, { known: true });
      }
    }
    memory.version = Number(reply[2]);
    memory.rememberLetGo(parseLetGo(reply[5] ?? ''));
    session.stamp = reply[1] ?? '';
    session.fired = parseFired(reply[4] ?? '[]');
    this.#weigh(id, session, memory.weight - before);
  }

  /** Marks the session most recently used and adds `delta` to the cache's weight, dropping the least recently used. */
  #weigh(id: string, session: CachedSession, delta: number): void {
    if (this.#cache.get(id) !== session) return;
    this.#cache.delete(id);
    this.#cache.set(id, session);
    this.#cachedWeight += delta;
    for (const [oldest, cached] of this.#cache) {
      if (this.#cachedWeight <= this.#cacheFacts || oldest === id) break;
      this.#forget(oldest, cached);
    }
  }

  /** Whether `session` is the copy writes to the session take: cached, or let go with writes in flight. */
  #holds(id: string, session: CachedSession): boolean {
    return this.#cache.get(id) === session || this.#letGo.get(id) === session;
  }

  /** Drops the copy, cached or let go (only `session` when given: a newer copy read meanwhile stays). */
  #forget(id: string, session?: CachedSession): void {
    const letGo = this.#letGo.get(id);
    if (letGo !== undefined && (session === undefined || letGo === session)) this.#letGo.delete(id);
    const cached = this.#cache.get(id);
    if (cached === undefined || (session !== undefined && cached !== session)) return;
    this.#cache.delete(id);
    this.#cachedWeight -= cached.memory.weight + 1;
  }

  #nextStamp(): string {
    this.#stampCounter += 1;
    return `${this.#stampPrefix}.${this.#stampCounter.toString(36)}`;
  }

  async #run(name: LuaScriptName, keys: string[], args: string[]): Promise<unknown> {
    const command = (this.#client as unknown as Record<string, unknown>)[name];
    if (typeof command !== 'function') throw new AppError('INTERNAL_ERROR', `Script ${name} is not loaded.`);
    const script = command.bind(this.#client) as ScriptCommand;
    return this.#guard(() => script(keys.length, ...keys, ...args));
  }

  async #guard<T>(operation: () => Promise<T>): Promise<T> {
    // Never a command in database 0 when the server refused the one REDIS_URL names.
    if (this.#databaseRefused() !== undefined) throw new AppError('UNAVAILABLE', SESSION_STORE_UNAVAILABLE);
    try {
      return await operation();
    } catch (error) {
      throw toSessionStoreError(error);
    }
  }
}

/** Another instance wrote the session meanwhile: a short random pause keeps two busy writers from colliding again. */
async function backOff(id: string, attempt: number): Promise<void> {
  if (attempt >= MAX_ATTEMPTS) {
    throw new AppError('UNAVAILABLE', `Session '${id}' is being written by other instances too often to apply this write; retry.`);
  }
  if (attempt > 1) await sleep(Math.random() * Math.min(2 ** attempt, 50));
}

/** The lowest and highest rules revision a call's writes were evaluated under, as script arguments ('' for none). */
function revisionRange(batch: readonly PendingWrite[]): [string, string] {
  const revisions = batch.map((write) => write.revision).filter((revision) => revision !== undefined);
  return revisions.length === 0 ? ['', ''] : [String(Math.min(...revisions)), String(Math.max(...revisions))];
}

/** Where the facts of read-session.lua's and a BEHIND answer start: after the meta fields and the facts let go. */
const FACTS_FROM = 6;

/** The facts let go as Redis lists them (`<fact id> <fingerprint>` lines, oldest first). */
function parseLetGo(text: string): [string, string][] {
  if (text === '') return [];
  return text.split('\n').map((line) => {
    const space = line.indexOf(' ');
    return [line.slice(0, space), line.slice(space + 1)];
  });
}

/** A stored fact back from its JSON and contribution record (absent: it contributes nothing). */
function storedFact(json: string, record: string | undefined): StoredFact {
  if (record === undefined) return { json, eventTimeMs: 0, contributions: [], seq: 0 };
  return { json, ...parseContributionRecord(record) };
}

function asArray(reply: unknown): unknown[] {
  if (!Array.isArray(reply)) throw new AppError('INTERNAL_ERROR', 'Session script returned an unexpected reply.');
  return reply;
}

function replyValue(entry: [Error | null, unknown] | undefined): unknown {
  if (entry?.[0]) throw toSessionStoreError(entry[0]);
  return entry?.[1];
}

function isStringRecord(value: unknown): value is Record<string, string> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function parseChange(json: string): FiredChange {
  const parsed = JSON.parse(json) as { activated?: unknown; deactivated?: unknown };
  return { activated: idList(parsed.activated), deactivated: idList(parsed.deactivated) };
}

function idList(value: unknown): number[] {
  return Array.isArray(value) ? value.filter((n): n is number => typeof n === 'number') : [];
}

/** Meta `aggregates` and `aggregates_at`; undefined before the first write. ±Infinity from its string, other non-numbers as null. */
function parseAggregates(json: string | undefined, at: string | undefined): AggregatesAsOf | undefined {
  if (json === undefined || at === undefined) return undefined;
  const parsed = JSON.parse(json) as Record<string, unknown>;
  const values: Aggregates = {};
  for (const [accumulatorId, value] of Object.entries(parsed)) values[accumulatorId] = storedAggregate(value);
  return { values, asOf: Number(at) };
}

function parseFired(json: string): number[] {
  return idList(JSON.parse(json));
}
