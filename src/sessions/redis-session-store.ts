// Working memory in Redis: every write is one Lua script per session, so any instance can serve any session.
import { Redis, type RedisOptions } from 'ioredis';
import { AppError } from '../errors.ts';
import { aggregateValue } from './aggregate-value.ts';
import { type SessionKeys, sessionKeys, valueKey, windowKey } from './keys.ts';
import { LUA_SCRIPTS, type LuaScriptName } from './lua-scripts.ts';
import { toSessionStoreError } from './redis-errors.ts';
import {
  checkAggregates,
  checkContributions,
  checkId,
  checkMaxFacts,
  checkSpecs,
  checkTime,
  checkTtl,
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

export interface RedisSessionStoreOptions {
  /** redis:// or rediss:// URL. */
  readonly url: string;
  /** Prepended to every key, e.g. `rules:`; tests use a unique one per run. */
  readonly keyPrefix?: string;
  /** How long to wait for the first connection before answering UNAVAILABLE; default 2000 ms. */
  readonly connectTimeoutMs?: number;
  /** Connection errors as they happen (ioredis reconnects by itself); default: ignored. */
  readonly onError?: (error: Error) => void;
}

type ScriptCommand = (numberOfKeys: number, ...args: (string | number)[]) => Promise<unknown>;

/** What an add derives from one specs array, kept while the array lives (the evaluator passes the same one each time). */
interface PreparedSpecs {
  readonly byId: Map<string, AccumulatorSpec>;
  readonly json: string;
  /** Three script arguments per spec (id, fn, windowMs or 0), so the scripts decode no JSON for them. */
  readonly args: readonly string[];
  /** Script keys per session id; bounded, as session ids come and go. */
  readonly keys: Map<string, string[]>;
}

const MAX_CACHED_KEY_LISTS = 10_000;

/** Options that make commands fail fast while Redis is away and reconnect forever in the background. */
export function sessionRedisOptions(connectTimeoutMs: number): RedisOptions {
  return {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: connectTimeoutMs,
    retryStrategy: (attempt) => Math.min(attempt * 100, 2000),
  };
}

/** Connects (waiting at most connectTimeoutMs for the first connection, never failing) and loads the scripts. */
export async function openRedisSessionStore(options: RedisSessionStoreOptions): Promise<RedisSessionStore> {
  const timeout = options.connectTimeoutMs ?? 2000;
  const client = new Redis(options.url, sessionRedisOptions(timeout));
  client.on('error', (error: Error) => options.onError?.(error));
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, timeout);
    client.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  return new RedisSessionStore(client, options.keyPrefix ?? '');
}

export class RedisSessionStore implements SessionStore {
  readonly #client: Redis;
  readonly #prefix: string;
  readonly #prepared = new WeakMap<readonly AccumulatorSpec[], PreparedSpecs>();

  /** Takes ownership of the client: close() quits it. */
  constructor(client: Redis, keyPrefix: string) {
    this.#client = client;
    this.#prefix = keyPrefix;
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
      [keys.meta],
      [input.rulesetId, String(input.now), String(input.now + ttlMs), String(ttlMs)],
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
    const parsedFacts: Record<string, unknown> = {};
    for (const [factId, json] of Object.entries(facts)) parsedFacts[factId] = JSON.parse(json);
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
    return this.#guard(async () => {
      const accumulatorIds = await this.#client.smembers(keys.accumulators);
      const accumulatorKeys = accumulatorIds.flatMap((a) => [windowKey(this.#prefix, id, a), valueKey(this.#prefix, id, a)]);
      // All keys share the `{id}` hash tag, so one multi-key DEL is cluster-safe.
      const fixed = [keys.meta, keys.facts, keys.contributions, keys.totals, keys.accumulators, keys.changes];
      const deleted = await this.#client.del(...fixed, ...accumulatorKeys);
      return deleted > 0;
    });
  }

  async addFact(id: string, input: AddFactInput): Promise<AddFactResult | undefined> {
    checkId('session id', id);
    checkId('fact id', input.factId);
    checkTime('eventTimeMs', input.eventTimeMs);
    checkTime('now', input.now);
    checkMaxFacts(input.maxFacts);
    const prepared = this.#prepare(input.specs);
    checkContributions(input.contributions, prepared.byId);
    const factJson = JSON.stringify(input.fact);
    if (factJson === undefined) throw new AppError('VALIDATION_ERROR', 'The fact must be a JSON value.');
    const record = JSON.stringify({
      t: String(input.eventTimeMs),
      c: input.contributions.map((c) => [c.accumulatorId, String(c.value)]),
    });
    const reply = await this.#run('sessionAddFact', this.#scriptKeys(id, input.specs, prepared), [
      input.factId,
      factJson,
      record,
      prepared.json,
      String(input.now),
      String(input.maxFacts),
      ...prepared.args,
    ]);
    const parts = asArray(reply);
    if (parts[0] === 'NOT_FOUND') return undefined;
    if (parts[0] === 'FULL') throw sessionFull(id, input.maxFacts);
    const oldJson = String(parts[4] ?? '');
    const changeJson = String(parts[6] ?? '');
    return {
      factCount: Number(parts[1]),
      version: Number(parts[2]),
      replaced: Number(parts[3]) === 1,
      oldFact: oldJson === '' ? undefined : JSON.parse(oldJson),
      duplicate: Number(parts[5]) === 1,
      change: changeJson === '' ? undefined : parseChange(changeJson),
      aggregates: readAggregates(input.specs, parts.slice(7)),
    };
  }

  async retractFact(id: string, factId: string, input: RetractFactInput): Promise<RetractFactResult | undefined> {
    checkId('session id', id);
    checkId('fact id', factId);
    checkTime('now', input.now);
    const prepared = this.#prepare(input.specs);
    const reply = await this.#run('sessionRetractFact', this.#scriptKeys(id, input.specs, prepared), [
      factId,
      String(input.now),
      ...prepared.args,
    ]);
    const parts = asArray(reply);
    if (parts[0] === 'NOT_FOUND') return undefined;
    return {
      factCount: Number(parts[1]),
      version: Number(parts[2]),
      removed: Number(parts[3]) === 1,
      aggregates: readAggregates(input.specs, parts.slice(4)),
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
    const keys = sessionKeys(this.#prefix, id);
    const parts = asArray(
      await this.#run(
        'sessionSetFired',
        [keys.meta, keys.changes],
        [
          String(version),
          JSON.stringify(fired),
          factId ?? '',
          aggregates === undefined ? '' : JSON.stringify(aggregates.values),
          aggregates === undefined ? '' : String(aggregates.asOf),
        ],
      ),
    );
    if (parts[0] === 'NOT_FOUND') return undefined;
    return { previous: parseFired(String(parts[1])), applied: Number(parts[2]) === 1 };
  }

  async ping(): Promise<boolean> {
    try {
      return (await this.#client.ping()) === 'PONG';
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    try {
      await this.#client.quit();
    } catch {
      // Already disconnected: nothing left to release.
      this.#client.disconnect();
    }
  }

  /** Validates a specs array once and keeps what every add derives from it (specs are never mutated once passed). */
  #prepare(specs: readonly AccumulatorSpec[]): PreparedSpecs {
    let prepared = this.#prepared.get(specs);
    if (prepared === undefined) {
      prepared = { byId: checkSpecs(specs), json: specsJson(specs), args: specArgs(specs), keys: new Map() };
      this.#prepared.set(specs, prepared);
    }
    return prepared;
  }

  #scriptKeys(id: string, specs: readonly AccumulatorSpec[], prepared: PreparedSpecs): string[] {
    const cached = prepared.keys.get(id);
    if (cached !== undefined) return cached;
    const keys: SessionKeys = sessionKeys(this.#prefix, id);
    const fixed = [keys.meta, keys.facts, keys.contributions, keys.totals, keys.accumulators, keys.changes];
    const list = fixed.concat(specs.flatMap((s) => [windowKey(this.#prefix, id, s.id), valueKey(this.#prefix, id, s.id)]));
    if (prepared.keys.size >= MAX_CACHED_KEY_LISTS) prepared.keys.clear();
    prepared.keys.set(id, list);
    return list;
  }

  async #run(name: LuaScriptName, keys: string[], args: string[]): Promise<unknown> {
    const command = (this.#client as unknown as Record<string, unknown>)[name];
    if (typeof command !== 'function') throw new AppError('INTERNAL_ERROR', `Script ${name} is not loaded.`);
    const script = command.bind(this.#client) as ScriptCommand;
    return this.#guard(() => script(keys.length, ...keys, ...args));
  }

  async #guard<T>(operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      throw toSessionStoreError(error);
    }
  }
}

function specsJson(specs: readonly AccumulatorSpec[]): string {
  return JSON.stringify(specs.map((s) => [s.id, s.fn, s.windowMs ?? 0]));
}

function specArgs(specs: readonly AccumulatorSpec[]): string[] {
  return specs.flatMap((s) => [s.id, s.fn, String(s.windowMs ?? 0)]);
}

function readAggregates(specs: readonly AccumulatorSpec[], values: unknown[]): Aggregates {
  const aggregates: Aggregates = {};
  specs.forEach((spec, i) => {
    const extreme = String(values[i * 3 + 2] ?? '');
    aggregates[spec.id] = aggregateValue(spec, {
      count: Number(values[i * 3]),
      sum: Number(values[i * 3 + 1]),
      extreme: extreme === '' ? undefined : Number(extreme),
    });
  });
  return aggregates;
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

/** Meta `aggregates` and `aggregates_at`; undefined when set-fired stored none. Non-numbers read as null. */
function parseAggregates(json: string | undefined, at: string | undefined): AggregatesAsOf | undefined {
  if (json === undefined || at === undefined) return undefined;
  const parsed = JSON.parse(json) as Record<string, unknown>;
  const values: Aggregates = {};
  for (const [accumulatorId, value] of Object.entries(parsed)) values[accumulatorId] = typeof value === 'number' ? value : null;
  return { values, asOf: Number(at) };
}

function parseFired(json: string): number[] {
  return idList(JSON.parse(json));
}
