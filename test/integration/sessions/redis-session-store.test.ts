import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { legacySessionKeys, sessionKeys } from '../../../src/sessions/keys.ts';
import { MemorySessionStore } from '../../../src/sessions/memory-session-store.ts';
import {
  openRedisSessionStore,
  RedisSessionStore,
  sessionRedisOptions,
  WRITES_PER_GROUP,
  watchDatabaseSelection,
} from '../../../src/sessions/redis-session-store.ts';
import { registerSessionCacheMetrics } from '../../../src/sessions/session-cache-metrics.ts';
import type { SessionStore } from '../../../src/sessions/session-store.ts';
import { sessionStoreContract } from './session-store-contract.ts';

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = `test:${randomUUID()}:`;

async function removeAll(admin: Redis, pattern: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await admin.scan(cursor, 'MATCH', pattern, 'COUNT', 10_000);
    cursor = next;
    if (keys.length > 0) await admin.del(...keys);
  } while (cursor !== '0');
}

async function keysMatching(admin: Redis, pattern: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await admin.scan(cursor, 'MATCH', pattern, 'COUNT', 10_000);
    cursor = next;
    found.push(...keys);
  } while (cursor !== '0');
  return found.sort();
}

/**
 * Opens a store under a key prefix of its own and an admin connection before the enclosing describe's tests, hands both
 * to `use`, and removes the prefix's keys and closes both after them. Returns the prefix.
 */
function storeUnderOwnPrefix(use: (store: RedisSessionStore, admin: Redis) => void): string {
  const ownPrefix = `test:${randomUUID()}:`;
  let store: RedisSessionStore | undefined;
  let admin: Redis | undefined;
  beforeAll(async () => {
    store = await openRedisSessionStore({ url, keyPrefix: ownPrefix });
    admin = new Redis(url);
    use(store, admin);
  });
  afterAll(async () => {
    if (admin !== undefined) {
      await removeAll(admin, `${ownPrefix}*`);
      admin.disconnect();
    }
    await store?.close();
  });
  return ownPrefix;
}

sessionStoreContract('Redis', {
  open: () => openRedisSessionStore({ url, keyPrefix: prefix }),
  cleanup: async () => {
    const admin = new Redis(url);
    try {
      await removeAll(admin, `${prefix}*`);
    } finally {
      admin.disconnect();
    }
  },
});

const none = (): number[] => [];

describe('Redis session store layout', () => {
  let store: RedisSessionStore;
  let admin: Redis;
  const layoutPrefix = storeUnderOwnPrefix((opened, connection) => {
    store = opened;
    admin = connection;
  });

  it('keeps facts, contribution records and changes in hash-tagged hashes expiring with the session', async () => {
    const id = `s-${randomUUID()}`;
    const now = Date.now();
    await store.create({ id, rulesetId: 'rs-1', ttlSeconds: 600, now });
    const specs = [{ id: 'n', fn: 'count' as const, windowMs: 60_000 }];
    const base = { eventTimeMs: now, contributions: [{ accumulatorId: 'n', value: 1 }], specs, now, maxFacts: 10 };
    await store.addFact(id, { ...base, factId: 'a', fact: { n: 1 }, fire: () => [4, 5] });
    await store.addFact(id, { ...base, factId: 'b', fact: { n: 2 }, fire: () => [5] });

    const keys = sessionKeys(layoutPrefix, id);
    expect(await keysMatching(admin, `${layoutPrefix}session:{${id}}*`)).toEqual(
      [keys.meta, keys.facts, keys.contributions, keys.changes, keys.log].sort(),
    );
    // The log: the create's stamp, then each write's stamp and fact id; the latest is the session's stamp.
    const log = await admin.lrange(keys.log, 0, -1);
    expect(log.map((entry) => entry.slice(entry.indexOf(' ')))).toEqual([' ', ' a', ' b']);
    expect(log.at(-1)?.split(' ')[0]).toBe(await admin.hget(keys.meta, 'stamp'));
    expect(await admin.hgetall(keys.facts)).toEqual({ a: '{"n":1}', b: '{"n":2}' });
    expect(await admin.hget(keys.contributions, 'a')).toBe(`{"t":"${now}","s":"1","c":[["n","1"]]}`);
    expect(await admin.hget(keys.contributions, 'b')).toBe(`{"t":"${now}","s":"2","c":[["n","1"]]}`);
    expect(await admin.hgetall(keys.changes)).toEqual({
      a: '{"activated":[4,5],"deactivated":[]}',
      b: '{"activated":[],"deactivated":[4]}',
    });
    expect(await admin.hmget(keys.meta, 'version', 'fired', 'aggregates', 'aggregates_at', 'watermark')).toEqual([
      '2',
      '[5]',
      '{"n":2}',
      String(now),
      String(now),
    ]);
    for (const key of [keys.meta, keys.facts, keys.contributions, keys.changes, keys.log]) {
      const ttl = await admin.pttl(key);
      expect({ key, live: ttl > 630_000 && ttl <= 637_500 }).toEqual({ key, live: true });
    }

    // Retracting the only facts empties the hashes; adding again (no refresh due) creates them with the session TTL.
    await store.retractFact(id, 'a', { specs, now: now + 1, fire: none });
    expect(await admin.hkeys(keys.changes)).toEqual(['b']);
    await store.retractFact(id, 'b', { specs, now: now + 2, fire: none });
    await store.addFact(id, { ...base, factId: 'c', fact: { n: 3 }, now: now + 3, fire: none });
    for (const key of [keys.facts, keys.contributions, keys.changes]) {
      const ttl = await admin.pttl(key);
      expect({ key, live: ttl > 630_000 && ttl <= 637_500 }).toEqual({ key, live: true });
    }
    // The first write found less than the TTL left: ttl + ttl / 16 from it.
    expect((await store.get(id))?.expiresAt).toBe(now + 637_500);
    // A duplicate and a retraction of an absent fact store nothing of their own but move the watermark on.
    await store.addFact(id, { ...base, factId: 'c', fact: { n: 3 }, now: now + 4, fire: none });
    expect(await admin.hmget(keys.meta, 'version', 'watermark')).toEqual(['5', String(now + 4)]);
    await store.retractFact(id, 'absent', { specs, now: now + 5, fire: none });
    expect(await admin.hmget(keys.meta, 'version', 'watermark', 'aggregates_at')).toEqual(['5', String(now + 5), String(now + 3)]);
    expect(await store.delete(id)).toBe(true);
    expect(await keysMatching(admin, `${layoutPrefix}session:{${id}}*`)).toEqual([]);
  });

  it('reads a session an earlier layout wrote from its contribution records, and delete removes its other keys', async () => {
    const id = `s-${randomUUID()}`;
    const now = Date.now();
    await store.create({ id, rulesetId: 'rs-1', ttlSeconds: 600, now });
    const keys = sessionKeys(layoutPrefix, id);
    const legacy = legacySessionKeys(layoutPrefix, id);
    // What an earlier version stored for two facts worth 5 and 7 (no stamp, no watermark, running totals beside them).
    await admin.hdel(keys.meta, 'stamp');
    for (const [factId, amount, at] of [
      ['a', '5', now - 50_000],
      ['b', '7', now],
    ] as const) {
      await admin.hset(keys.facts, factId, JSON.stringify({ amount: Number(amount) }));
      await admin.hset(
        keys.contributions,
        factId,
        JSON.stringify({
          t: String(at),
          c: [
            ['spend', amount],
            ['top', amount],
          ],
        }),
      );
      await admin.zadd(legacy.perAccumulator('spend')[0] ?? '', at, `${factId}|${amount}`);
    }
    await admin.hset(legacy.totals, 'spend:n', '2', 'spend:s', '12');
    await admin.sadd(legacy.accumulators, 'spend');
    await admin.hset(keys.meta, 'version', '2');
    const specs = [
      { id: 'spend', fn: 'sum' as const, windowMs: 60_000 },
      { id: 'top', fn: 'max' as const, windowMs: 60_000 },
    ];
    const added = await store.addFact(id, {
      factId: 'c',
      fact: { amount: 2 },
      eventTimeMs: now + 30_000,
      contributions: [
        { accumulatorId: 'spend', value: 2 },
        { accumulatorId: 'top', value: 2 },
      ],
      specs,
      now: now + 30_000,
      maxFacts: 10,
      fire: none,
    });
    // 'a', 50 s before `now`, has left both 60 s windows by now + 30 s.
    expect(added).toMatchObject({ version: 3, factCount: 3, aggregates: { spend: 9, top: 7 } });
    const later = await store.retractFact(id, 'none', { specs, now: now + 61_000, fire: none });
    expect(later?.aggregates).toEqual({ spend: 2, top: 2 });
    expect(await store.delete(id)).toBe(true);
    expect(await keysMatching(admin, `${layoutPrefix}session:{${id}}*`)).toEqual([]);
  });
});

describe('Redis session store across instances', () => {
  let store: RedisSessionStore;
  let other: RedisSessionStore;
  let small: RedisSessionStore;
  let admin: Redis;
  const sharedPrefix = storeUnderOwnPrefix((opened, connection) => {
    store = opened;
    admin = connection;
  });
  beforeAll(async () => {
    other = await openRedisSessionStore({ url, keyPrefix: sharedPrefix });
    small = await openRedisSessionStore({ url, keyPrefix: sharedPrefix, cacheFacts: 3 });
  });
  afterAll(async () => {
    await other?.close();
    await small?.close();
  });
  const specs = [
    { id: 'n', fn: 'count' as const, windowMs: 10_000 },
    { id: 's', fn: 'sum' as const },
    { id: 'hi', fn: 'max' as const, windowMs: 10_000 },
  ];
  const T = Date.UTC(2026, 0, 1);
  /** A connection of the test's own, ready, for a store whose commands the test counts. */
  const readyClient = async (): Promise<Redis> => {
    const client = new Redis(url, sessionRedisOptions(2_000));
    await new Promise((resolve) => client.once('ready', resolve));
    return client;
  };
  /** A store on a connection of the test's own that counts the store's whole-session reads (read-session.lua calls). */
  const readCountedStore = async (options: { cacheFacts?: number } = {}) => {
    const client = await readyClient();
    const store = new RedisSessionStore(client, sharedPrefix, options);
    const counter = { reads: 0 };
    // Wrapped after the store defined its scripts.
    const commands = client as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    const read = commands.sessionRead?.bind(client);
    commands.sessionRead = (...args: unknown[]) => {
      counter.reads += 1;
      return read?.(...args) ?? Promise.reject(new Error('sessionRead is not defined'));
    };
    return { client, store, counter };
  };
  const addInputOf = (factId: string, value: number, at: number, fire: () => number[] = none) => ({
    factId,
    fact: { factId, value },
    eventTimeMs: at,
    contributions: specs.map((spec) => ({ accumulatorId: spec.id, value })),
    specs,
    now: at,
    maxFacts: 100,
    fire,
  });
  const add = (client: RedisSessionStore, id: string, factId: string, value: number, at: number, fire: () => number[] = none) =>
    client.addFact(id, addInputOf(factId, value, at, fire));

  it('sees what another instance wrote since its copy was read, and answers as one instance would', async () => {
    const id = `s-${randomUUID()}`;
    await store.create({ id, rulesetId: 'rs-1', ttlSeconds: 600, now: T });
    await add(store, id, 'a', 5, T, () => [1]);
    await add(other, id, 'b', 9, T + 1_000, () => [1, 2]);
    // store's copy misses b: its write is refused as stale, and worked out again on a fresh copy.
    const third = await add(store, id, 'c', 1, T + 2_000, () => [2]);
    expect(third).toMatchObject({ version: 3, factCount: 3, aggregates: { n: 3, s: 15, hi: 9 } });
    expect(third?.change).toEqual({ activated: [], deactivated: [1] });
    const retracted = await other.retractFact(id, 'b', { specs, now: T + 3_000, fire: none });
    expect(retracted).toMatchObject({ version: 4, removed: true, aggregates: { n: 2, s: 6, hi: 5 } });
    // A retraction of what another instance removed meanwhile finds nothing there.
    expect(await store.retractFact(id, 'b', { specs, now: T + 3_000, fire: none })).toMatchObject({ removed: false, version: 4 });
    // Windows end where the latest write left them, whichever instance wrote it: 'a' left them at T + 10 s.
    const late = await add(other, id, 'd', 2, T + 10_001);
    expect(late?.aggregates).toEqual({ n: 2, s: 8, hi: 2 });
    expect((await add(store, id, 'd', 2, T + 10_001))?.duplicate).toBe(true);
    expect(await store.get(id)).toMatchObject({ version: 5, factCount: 3, firedRules: [] });
  });

  it('makes room among facts of one event time in the order they were added, on an instance that read the session fresh too', async () => {
    const id = `s-${randomUUID()}`;
    await store.create({ id, rulesetId: 'rs-1', ttlSeconds: 600, now: T });
    // Facts past 64 bytes: Redis keeps the hash unordered, so a fresh read holds them in no set order.
    const streamed = (factId: string) => ({
      ...addInputOf(factId, 1, T),
      fact: { factId, pad: 'x'.repeat(100) },
      maxFacts: 20,
      evictOldest: true,
    });
    for (let i = 1; i <= 40; i += 1) await store.addFact(id, streamed(`f${i}`));
    const fresh = await readCountedStore();
    try {
      await fresh.store.addFact(id, streamed('f41'));
      expect(fresh.counter.reads).toBe(1);
      await store.addFact(id, streamed('f42'));
      const held = (await other.get(id))?.facts ?? {};
      expect(Object.keys(held).sort((a, b) => Number(a.slice(1)) - Number(b.slice(1)))).toEqual(
        Array.from({ length: 20 }, (_, i) => `f${i + 23}`),
      );
    } finally {
      await fresh.store.close();
    }
  });

  it('works a write out again when another instance moved time on without writing a fact (a refused write)', async () => {
    const id = `s-${randomUUID()}`;
    await store.create({ id, rulesetId: 'rs-1', ttlSeconds: 600, now: T });
    await add(store, id, 'f1', 5, T);
    // Another instance's retraction of a fact the session never held stores nothing but its time: T + 20 s.
    expect(await other.retractFact(id, 'x', { specs, now: T + 20_000, fire: none })).toMatchObject({ removed: false });
    // store's copy still ends its windows at T; Redis ends them at T + 20 s, where both facts are out of the 10 s windows.
    const late = await store.addFact(id, {
      factId: 'f2',
      fact: { factId: 'f2', value: 7 },
      eventTimeMs: T + 6_000,
      contributions: specs.map((spec) => ({ accumulatorId: spec.id, value: 7 })),
      specs,
      now: T + 10_000,
      maxFacts: 100,
      fire: none,
    });
    expect(late?.aggregates).toEqual({ n: 0, s: 12, hi: null });
    expect((await add(other, id, 'f3', 1, T + 20_000))?.aggregates).toEqual({ n: 1, s: 13, hi: 1 });
  });

  it('counts concurrent adds of two instances to one session exactly once each', async () => {
    const id = `s-${randomUUID()}`;
    await store.create({ id, rulesetId: 'rs-1', ttlSeconds: 600, now: T });
    const results = await Promise.all(Array.from({ length: 60 }, (_, i) => add(i % 2 === 0 ? store : other, id, `f-${i}`, i, T + i)));
    expect(new Set(results.map((r) => r?.version)).size).toBe(60);
    const final = await store.retractFact(id, 'none', { specs, now: T + 60, fire: none });
    expect(final).toMatchObject({ version: 60, factCount: 60, aggregates: { n: 60, s: (59 * 60) / 2, hi: 59 } });
  });

  it('keeps many writes of one session in flight and applies them in the order it worked them out', async () => {
    const id = `s-${randomUUID()}`;
    await store.create({ id, rulesetId: 'rs-1', ttlSeconds: 600, now: T });
    await add(store, id, 'warm', 1, T);
    const burst = Array.from({ length: 40 }, (_, i) => add(store, id, `f-${i}`, 1, T + 1 + i, () => [i]));
    // Another instance writes while the burst is on the wire: the rest of the burst is refused as stale and redone.
    const between = await add(other, id, 'other', 1, T + 1);
    const results = await Promise.all(burst);
    expect(between?.version).toBeGreaterThan(1);
    expect(new Set([...results.map((r) => r?.version), between?.version]).size).toBe(41);
    // Each answer describes the session as of its own version: all facts new, so the count is the version.
    for (const result of [...results, between]) expect(result?.aggregates.n).toBe(result?.factCount);
    for (const result of [...results, between]) expect(result?.factCount).toBe(result?.version);
    const final = await store.retractFact(id, 'none', { specs, now: T + 41, fire: none });
    expect(final).toMatchObject({ version: 42, factCount: 42, aggregates: { n: 42 } });
  });

  it('brings a copy a few writes behind up to date from the log, and reads the session again only when too far behind', async () => {
    const { store: counted, counter } = await readCountedStore();
    try {
      const id = `s-${randomUUID()}`;
      await counted.create({ id, rulesetId: 'rs-1', ttlSeconds: 600, now: T });
      let at = T;
      let total = 0;
      let facts = 0;
      const next = async (client: RedisSessionStore, factId: string, value: number) => {
        at += 1;
        total += value;
        facts += 1;
        return add(client, id, factId, value, at);
      };
      for (let round = 0; round < 5; round += 1) {
        // Another instance writes, replaces and retracts; this one's copy misses it all.
        await next(other, `o-${round}`, 2);
        await next(other, `o-${round}-b`, 3);
        await add(other, id, `o-${round}-b`, 4, at);
        total += 1;
        expect(await other.retractFact(id, `o-${round}`, { specs, now: at, fire: none })).toMatchObject({ removed: true });
        total -= 2;
        facts -= 1;
        const mine = await next(counted, `c-${round}`, 1);
        expect(mine).toMatchObject({ factCount: facts, aggregates: { n: facts, s: total } });
      }
      expect(counter.reads).toBe(1);
      // More writes than the log keeps: the copy's stamp has left it, so the session is read again.
      for (let i = 0; i < 70; i += 1) await next(other, `o-many-${i}`, 1);
      expect(await next(counted, 'c-last', 1)).toMatchObject({ factCount: facts, aggregates: { n: facts, s: total } });
      expect(counter.reads).toBe(2);
    } finally {
      await counted.close();
    }
  });

  it('sends the writes of one session worked out in the same tick in script calls of at most WRITES_PER_GROUP writes', async () => {
    const client = await readyClient();
    const batched = new RedisSessionStore(client, sharedPrefix);
    // Counted after the store defined its scripts: writes per call, from its arguments (key count, 7 keys, 8 per call, 7 per write).
    const commands = client as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    const write = commands.sessionWrite?.bind(client);
    let calls: number[] = [];
    commands.sessionWrite = (...args: unknown[]) => {
      calls.push((args.length - 1 - 7 - 8) / 7);
      return write?.(...args) ?? Promise.reject(new Error('sessionWrite is not defined'));
    };
    try {
      const id = `s-${randomUUID()}`;
      await batched.create({ id, rulesetId: 'rs-1', ttlSeconds: 600, now: T });
      await add(batched, id, 'first', 1, T);
      calls = [];
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => add(batched, id, `f-${i}`, i, T + 1 + i)));
      expect(WRITES_PER_GROUP).toBe(8);
      expect(calls).toEqual([8, 8, 4]);
      expect(results.map((r) => r?.version)).toEqual(Array.from({ length: 20 }, (_, i) => i + 2));
      expect(results.at(-1)?.aggregates).toEqual({ n: 21, s: 1 + (19 * 20) / 2, hi: 19 });
      // Another instance reads what the three calls stored.
      expect(await other.retractFact(id, 'none', { specs, now: T + 21, fire: none })).toMatchObject({ version: 21, factCount: 21 });
    } finally {
      await batched.close();
    }
  });

  it('hands the calls of several sessions written in the same tick to the socket together, WRITES_PER_GROUP writes at a time', async () => {
    const client = await readyClient();
    const corked = new RedisSessionStore(client, sharedPrefix);
    const ids = Array.from({ length: 4 }, () => `s-${randomUUID()}`);
    try {
      for (const id of ids) {
        await corked.create({ id, rulesetId: 'rs-1', ttlSeconds: 600, now: T });
        await add(corked, id, 'first', 1, T);
      }
      // Counted at the socket: a corked stream hands Node's stream machinery its buffered chunks in one writev.
      const socket = client.stream as unknown as { _write: (...a: unknown[]) => void; _writev: (...a: unknown[]) => void };
      const write = socket._write.bind(socket);
      const writev = socket._writev.bind(socket);
      let writes = 0;
      socket._write = (...args) => {
        writes += 1;
        write(...args);
      };
      socket._writev = (...args) => {
        writes += 1;
        writev(...args);
      };
      // 12 writes: the first 8 (three sessions) leave in one system call as soon as they are pending, the rest at the end of the tick.
      const results = await Promise.all(
        ids.flatMap((id) => [add(corked, id, 'a', 2, T + 1), add(corked, id, 'b', 3, T + 2), add(corked, id, 'c', 4, T + 3)]),
      );
      expect(WRITES_PER_GROUP).toBe(8);
      expect(writes).toBe(2);
      expect(results.map((r) => r?.aggregates)).toEqual(
        ids.flatMap(() => [
          { n: 2, s: 3, hi: 2 },
          { n: 3, s: 6, hi: 3 },
          { n: 4, s: 10, hi: 4 },
        ]),
      );
    } finally {
      await corked.close();
    }
  });

  it("takes Redis's record of a fact another instance stored, even when its copy worked out the same JSON at another time", async () => {
    const id = `s-${randomUUID()}`;
    await store.create({ id, rulesetId: 'rs-1', ttlSeconds: 600, now: T });
    await add(store, id, 'seed', 1, T);
    await add(other, id, 'x', 1, T + 1_000);
    // The same fact again through store (a redelivery): its copy is behind, catches up and finds a duplicate.
    expect((await add(store, id, 'x', 1, T + 5_000))?.duplicate).toBe(true);
    // Redis holds x at T + 1 s, so the 10 s windows have left it (and seed) behind at T + 11.5 s.
    const later = await add(store, id, 'y', 1, T + 11_500);
    expect(later?.aggregates).toMatchObject({ n: 1, hi: 1 });
    expect(later?.aggregates).toEqual((await add(other, id, 'y', 1, T + 11_500))?.aggregates);
  });

  it('starts a session created again under an id whose meta alone was lost (evicted) with none of the old facts', async () => {
    const id = `s-${randomUUID()}`;
    await store.create({ id, rulesetId: 'rs-1', ttlSeconds: 600, now: T });
    await add(store, id, 'old-1', 3, T);
    await add(store, id, 'old-2', 4, T);
    await admin.del(sessionKeys(sharedPrefix, id).meta);
    await other.create({ id, rulesetId: 'rs-1', ttlSeconds: 600, now: T });
    expect(await other.get(id)).toMatchObject({ factCount: 0, facts: {}, version: 0 });
    expect(await add(other, id, 'new', 5, T)).toMatchObject({ factCount: 1, aggregates: { n: 1, s: 5 } });
  });

  it('never takes a copy of a deleted session for a new one under the same id', async () => {
    const id = `s-${randomUUID()}`;
    await store.create({ id, rulesetId: 'rs-1', ttlSeconds: 600, now: T });
    await add(store, id, 'a', 5, T);
    await other.delete(id);
    await other.create({ id, rulesetId: 'rs-1', ttlSeconds: 600, now: T });
    // Same id, same version to come (1), yet the write is refused as stale and store reads the new session.
    expect(await add(store, id, 'b', 7, T)).toMatchObject({ version: 1, factCount: 1, aggregates: { n: 1, s: 7, hi: 7 } });
  });

  it('keeps the copies written most often when more sessions take turns than the cache holds, instead of reading each back', async () => {
    // Room for three sessions of four facts (each session counts one more), and four take turns.
    const { store: crowded, counter } = await readCountedStore({ cacheFacts: 15 });
    try {
      const ids = Array.from({ length: 4 }, () => `s-${randomUUID()}`);
      for (const id of ids) await crowded.create({ id, rulesetId: 'rs-1', ttlSeconds: 600, now: T });
      // Four facts each, then ten rounds replacing them: every session keeps four facts.
      const fill = 4;
      const rounds = fill + 10;
      let before = crowded.cacheStats();
      for (let round = 0; round < rounds; round += 1) {
        if (round === fill) {
          counter.reads = 0;
          before = crowded.cacheStats();
        }
        for (const [n, id] of ids.entries()) {
          const value = round * 10 + n;
          const result = await add(crowded, id, `f-${round % fill}`, value, T + round);
          expect(result).toMatchObject({ factCount: Math.min(round + 1, fill), replaced: round >= fill });
          expect(result?.aggregates.hi).toBe(value);
        }
      }
      // Dropping the least recently written would drop the session written next at every write (40 reads). Three
      // copies stay, so only the fourth session is read back, once per round.
      expect(counter.reads).toBe(rounds - fill);
      const after = crowded.cacheStats();
      expect(after).toMatchObject({ sessions: 3, facts: 12 });
      expect([after.reads - before.reads, after.readsLetGo - before.readsLetGo]).toEqual([rounds - fill, rounds - fill]);
      // The same figures as a scrape shows them.
      const registry = new Registry();
      registerSessionCacheMetrics(registry, crowded);
      const text = await registry.metrics();
      expect(text).toContain(`rules_session_cache_reads_total{outcome="cached"} ${after.reads - after.readsLetGo}`);
      expect(text).toContain(`rules_session_cache_reads_total{outcome="let_go"} ${after.readsLetGo}`);
      expect(text).toMatch(/^rules_session_cache_facts 12$/m);
      expect(text).toMatch(/^rules_session_cache_sessions 3$/m);
    } finally {
      await crowded.close();
    }
  });

  it('lets a session written more often than the cached one take its place, so the cache follows the writes', async () => {
    // Room for one session of four facts.
    const { store: narrow, counter } = await readCountedStore({ cacheFacts: 5 });
    try {
      const [a, b] = [`s-${randomUUID()}`, `s-${randomUUID()}`];
      for (const id of [a, b]) await narrow.create({ id, rulesetId: 'rs-1', ttlSeconds: 600, now: T });
      for (let i = 0; i < 4; i += 1) for (const id of [a, b]) await add(narrow, id, `f-${i}`, 1, T + i);
      for (let i = 0; i < 10; i += 1) await add(narrow, a, `f-${i % 4}`, 2, T + 4);
      counter.reads = 0;
      // a has 14 writes, b 4: b is read back at each write until its 11th here makes it the more written (15).
      for (let i = 0; i < 20; i += 1) {
        expect(await add(narrow, b, `f-${i % 4}`, i + 10, T + 5)).toMatchObject({ factCount: 4, replaced: true });
      }
      expect(counter.reads).toBe(11);
      expect(await add(narrow, a, 'f-0', 3, T + 6)).toMatchObject({ factCount: 4, aggregates: { hi: 3 } });
      expect(counter.reads).toBe(12);
    } finally {
      await narrow.close();
    }
  });

  it('lets writes that overlap share the read of a session the full cache does not keep', async () => {
    const { client, store: narrow, counter } = await readCountedStore({ cacheFacts: 5 });
    // Defined by the store: each script call is seen as it leaves.
    const commands = client as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    const write = commands.sessionWrite?.bind(client);
    let onWire = (): void => undefined;
    commands.sessionWrite = (...args: unknown[]) => {
      onWire();
      return write?.(...args) ?? Promise.reject(new Error('sessionWrite is not defined'));
    };
    try {
      const [a, b] = [`s-${randomUUID()}`, `s-${randomUUID()}`];
      for (const id of [a, b]) await narrow.create({ id, rulesetId: 'rs-1', ttlSeconds: 600, now: T });
      // a fills the cache (four facts and itself) and is written more often than b will be.
      for (let i = 0; i < 8; i += 1) await add(narrow, a, `f-${i % 4}`, 1, T + i);
      counter.reads = 0;
      const wired = new Promise<void>((resolve) => {
        onWire = resolve;
      });
      const first = add(narrow, b, 'x', 1, T + 10);
      await wired;
      // The first write is on the wire: the second takes the copy its read made instead of reading b again.
      const second = add(narrow, b, 'y', 2, T + 11);
      expect(await first).toMatchObject({ factCount: 1, aggregates: { s: 1 } });
      expect(await second).toMatchObject({ factCount: 2, aggregates: { s: 3 } });
      expect(counter.reads).toBe(1);
      // Nothing in flight any more: the copy is gone, so the next write reads b again, and a kept its place.
      expect(await add(narrow, b, 'z', 3, T + 12)).toMatchObject({ factCount: 3, aggregates: { s: 6 } });
      expect(counter.reads).toBe(2);
      expect(narrow.cacheStats()).toMatchObject({ sessions: 1, facts: 4, readsLetGo: 2 });
    } finally {
      await narrow.close();
    }
  });

  it('weighs a cached fact of long JSON as one fact per 4 KB of it, so large facts cannot fill the heap', async () => {
    const { client, store: weighed } = await readCountedStore({ cacheFacts: 20 });
    try {
      const ids = [`s-${randomUUID()}`, `s-${randomUUID()}`];
      const long = 'x'.repeat(41_000);
      for (const id of ids) {
        await weighed.create({ id, rulesetId: 'rs-1', ttlSeconds: 600, now: T });
        await weighed.addFact(id, { ...addInputOf(id, 1, T), fact: { long } });
      }
      // Each copy weighs 12 (the session and a fact of 41 KB): the second pushed the first out of a cache of 20.
      expect(weighed.cacheStats()).toMatchObject({ sessions: 1, facts: 11 });
    } finally {
      await weighed.close();
      client.disconnect();
    }
  });

  it('keeps at most cacheFacts facts cached and reads a dropped session again when written to', async () => {
    const ids = [`s-${randomUUID()}`, `s-${randomUUID()}`];
    for (const id of ids) await small.create({ id, rulesetId: 'rs-1', ttlSeconds: 600, now: T });
    for (let i = 0; i < 4; i += 1) {
      for (const id of ids) await add(small, id, `f-${i}`, i + 1, T + i);
    }
    for (const id of ids) {
      expect(await small.retractFact(id, 'f-0', { specs, now: T + 4, fire: none })).toMatchObject({
        removed: true,
        factCount: 3,
        aggregates: { n: 3, s: 9, hi: 4 },
      });
    }
  });
});

describe('Redis session store with instances whose clocks differ', () => {
  let ahead: RedisSessionStore;
  let behind: RedisSessionStore;
  let admin: Redis;
  const skewPrefix = storeUnderOwnPrefix((opened, connection) => {
    ahead = opened;
    admin = connection;
  });
  beforeAll(async () => {
    behind = await openRedisSessionStore({ url, keyPrefix: skewPrefix });
  });
  afterAll(async () => {
    await behind?.close();
  });
  const SKEW_MS = 120_000;

  it("refreshes the TTL by Redis's clock: one write from an instance ahead does not let the session expire under the others", async () => {
    const id = `s-${randomUUID()}`;
    await behind.create({ id, rulesetId: 'rs-1', ttlSeconds: 2, now: Date.now() });
    const add = (store: RedisSessionStore, factId: string, now: number) =>
      store.addFact(id, { factId, fact: { factId }, eventTimeMs: now, contributions: [], specs: [], now, maxFacts: 100, fire: none });
    expect(await add(ahead, 'from-ahead', Date.now() + SKEW_MS)).toMatchObject({ factCount: 1 });
    // Writes every 300 ms for twice the TTL: each one past 1/16 of the TTL since the last refresh keeps the session.
    for (let i = 0; i < 14; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await add(behind, `f-${i}`, Date.now()), `write ${i}`).toMatchObject({ factCount: i + 2 });
    }
    const left = await admin.pttl(sessionKeys(skewPrefix, id).meta);
    expect(left).toBeGreaterThan(1_500);
    await behind.delete(id);
  });

  it("counts a fact without an event time of its own at the session's time, on the instance behind and on a fresh read", async () => {
    const id = `s-${randomUUID()}`;
    const t0 = Date.now();
    const specs = [{ id: 'n', fn: 'count' as const, windowMs: 60_000 }];
    const arriving = (factId: string, now: number) => ({
      factId,
      fact: { factId },
      eventTimeMs: now,
      arrival: true,
      contributions: [{ accumulatorId: 'n', value: 1 }],
      specs,
      now,
      maxFacts: 100,
      fire: none,
    });
    await behind.create({ id, rulesetId: 'rs-1', ttlSeconds: 600, now: t0 });
    await ahead.addFact(id, arriving('login', t0 + SKEW_MS));
    for (const [i, factId] of ['fail-1', 'fail-2', 'fail-3'].entries()) {
      expect(await behind.addFact(id, arriving(factId, t0 + i)), factId).toMatchObject({ aggregates: { n: i + 2 } });
    }
    const fresh = await openRedisSessionStore({ url, keyPrefix: skewPrefix });
    try {
      expect(await fresh.addFact(id, arriving('fail-3', t0 + 5))).toMatchObject({ duplicate: true, aggregates: { n: 4 } });
    } finally {
      await fresh.close();
      await behind.delete(id);
    }
  });

  it('answers a duplicate from a copy whose clock is behind with the windows as the session has moved them', async () => {
    const id = `s-${randomUUID()}`;
    const t0 = Date.now();
    const specs = [{ id: 'n', fn: 'count' as const, windowMs: 60_000 }];
    const fire = (aggregates: Record<string, number | null>) => ((aggregates.n ?? 0) >= 2 ? [1] : []);
    const fail = (factId: string, now: number, eventTimeMs = t0) => ({
      factId,
      fact: { factId },
      eventTimeMs,
      contributions: [{ accumulatorId: 'n', value: 1 }],
      specs,
      now,
      maxFacts: 100,
      fire,
    });
    await behind.create({ id, rulesetId: 'rs-1', ttlSeconds: 600, now: t0 });
    await behind.addFact(id, fail('f1', t0));
    expect(await behind.addFact(id, fail('f2', t0 + 1))).toMatchObject({ aggregates: { n: 2 }, change: { activated: [1] } });
    // An instance two minutes ahead sends f1 again: a duplicate, but it moves the session's time past both facts' window.
    expect(await ahead.addFact(id, fail('f1', t0 + SKEW_MS))).toMatchObject({ duplicate: true, aggregates: { n: 0 } });
    // The instance behind, whose copy has not seen that, gets f2 again: its answer is of the windows as they are now.
    const again = await behind.addFact(id, fail('f2', t0 + 2));
    expect(again).toMatchObject({ duplicate: true, aggregates: { n: 0 } });
    const fresh = await openRedisSessionStore({ url, keyPrefix: skewPrefix });
    try {
      expect(await fresh.addFact(id, fail('f2', t0 + 3))).toMatchObject({ duplicate: true, aggregates: again?.aggregates });
    } finally {
      await fresh.close();
      await behind.delete(id);
    }
  });
});

describe('Redis session store against the in-process store', () => {
  let store: RedisSessionStore;
  let admin: Redis;
  const differentialPrefix = storeUnderOwnPrefix((opened, connection) => {
    store = opened;
    admin = connection;
  });
  const specs = [
    { id: 'n', fn: 'count' as const, windowMs: 10_000 },
    { id: 's', fn: 'sum' as const, windowMs: 5_000 },
    { id: 'lo', fn: 'min' as const, windowMs: 8_000 },
    { id: 'hi', fn: 'max' as const },
  ];

  type Step =
    | { kind: 'add'; factId: string; ageMs: number; value: number }
    | { kind: 'retract'; factId: string }
    | { kind: 'wait'; ms: number };
  const step: fc.Arbitrary<Step> = fc.oneof(
    {
      weight: 5,
      arbitrary: fc.record({
        kind: fc.constant('add' as const),
        factId: fc.constantFrom('a', 'b', 'c', 'd', 'e'),
        // Whole seconds, so event times often sit exactly on a window's edge.
        ageMs: fc.integer({ min: 0, max: 12 }).map((seconds) => seconds * 1_000),
        value: fc.integer({ min: -50, max: 50 }),
      }),
    },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('retract' as const), factId: fc.constantFrom('a', 'b', 'c', 'd', 'e') }) },
    {
      weight: 2,
      arbitrary: fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 0, max: 6 }).map((seconds) => seconds * 1_000) }),
    },
  );

  /** An add of `value` to every accumulator, its event time `ageMs` before `now`. */
  const addInput = (add: { factId: string; ageMs: number; value: number }, now: number) => ({
    factId: add.factId,
    fact: { value: add.value, at: now - add.ageMs },
    eventTimeMs: now - add.ageMs,
    contributions: specs.map((spec) => ({ accumulatorId: spec.id, value: add.value })),
    specs,
    now,
    maxFacts: 100,
    fire: none,
  });

  it("answers every write as the in-process store does, and keeps every key's TTL, through any sequence of writes", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 30 }), async (steps) => {
        const id = `s-${randomUUID()}`;
        const memory = new MemorySessionStore();
        let now = Date.UTC(2026, 0, 1);
        await store.create({ id, rulesetId: 'rs-1', ttlSeconds: 600, now });
        await memory.create({ id, rulesetId: 'rs-1', ttlSeconds: 600, now });
        for (const s of steps) {
          if (s.kind === 'wait') {
            now += s.ms;
            continue;
          }
          if (s.kind === 'add') {
            const input = addInput(s, now);
            const [redis, local] = [await store.addFact(id, input), await memory.addFact(id, input)];
            expect(redis).toEqual(local);
          } else {
            const [redis, local] = [
              await store.retractFact(id, s.factId, { specs, now, fire: none }),
              await memory.retractFact(id, s.factId, { specs, now, fire: none }),
            ];
            expect(redis).toEqual(local);
          }
          // No key of the session may live on without its TTL.
          for (const key of Object.values(sessionKeys(differentialPrefix, id))) {
            if ((await admin.exists(key)) === 1) expect(await admin.pttl(key), key).toBeGreaterThan(0);
          }
        }
        // Nor any key beyond those: one scan a run, since a scan walks the whole keyspace of a shared Redis.
        for (const key of await keysMatching(admin, `${differentialPrefix}session:{${id}}*`))
          expect(await admin.pttl(key), key).toBeGreaterThan(0);
        await store.delete(id);
      }),
      { numRuns: 60 },
    );
  });

  it('answers as the in-process store does when writes to several sessions overlap through a cache too small for them', async () => {
    const crowded = await openRedisSessionStore({ url, keyPrefix: differentialPrefix, cacheFacts: 4 });
    type Write = { session: number; kind: 'add' | 'retract'; factId: string; ageMs: number; value: number };
    const write: fc.Arbitrary<Write> = fc.record({
      session: fc.integer({ min: 0, max: 2 }),
      kind: fc.constantFrom('add' as const, 'add' as const, 'retract' as const),
      factId: fc.constantFrom('a', 'b', 'c', 'd'),
      ageMs: fc.integer({ min: 0, max: 12 }).map((seconds) => seconds * 1_000),
      value: fc.integer({ min: -50, max: 50 }),
    });
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(fc.array(write, { minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 10 }), async (bursts) => {
          const ids = [0, 1, 2].map(() => `s-${randomUUID()}`);
          const memory = new MemorySessionStore();
          let now = Date.UTC(2026, 0, 1);
          for (const id of ids) {
            await crowded.create({ id, rulesetId: 'rs-1', ttlSeconds: 600, now });
            await memory.create({ id, rulesetId: 'rs-1', ttlSeconds: 600, now });
          }
          const apply = (target: SessionStore, w: Write) => {
            const id = ids[w.session] as string;
            if (w.kind === 'retract') return target.retractFact(id, w.factId, { specs, now, fire: none });
            return target.addFact(id, addInput(w, now));
          };
          for (const burst of bursts) {
            now += 1_000;
            // Issued together: each session's writes are applied in the order they were made, as one at a time would.
            const redis = await Promise.all(burst.map((w) => apply(crowded, w)));
            const local = [];
            for (const w of burst) local.push(await apply(memory, w));
            expect(redis).toEqual(local);
          }
          for (const id of ids) await crowded.delete(id);
        }),
        { numRuns: 40 },
      );
      // The runs went through the paths meant: copies read, kept and let go.
      const stats = crowded.cacheStats();
      expect(stats.readsLetGo).toBeGreaterThan(0);
      expect(stats.reads).toBeGreaterThan(stats.readsLetGo);
    } finally {
      await crowded.close();
    }
  });
});

describe('a connection on which the server refused the database REDIS_URL names', () => {
  it('answers every call UNAVAILABLE and fails its ping, writing nothing in database 0 instead', async () => {
    const ownPrefix = `test:${randomUUID()}:`;
    const target = new URL(url);
    target.pathname = '/99';
    // As after a reconnect: ioredis reports the connection ready although its SELECT was refused.
    const client = new Redis(target.toString(), { ...sessionRedisOptions(2_000), lazyConnect: true });
    client.on('error', () => undefined);
    const refused = watchDatabaseSelection(client);
    await client.connect();
    const store = new RedisSessionStore(client, ownPrefix, { databaseRefused: refused });
    const admin = new Redis(url);
    try {
      expect(refused()).toMatch(/^REDIS_URL names database 99, which this Redis server refuses: ERR DB index is out of range/);
      await expect(store.create({ id: 's-1', rulesetId: 'r', ttlSeconds: 60, now: Date.now() })).rejects.toMatchObject({
        code: 'UNAVAILABLE',
      });
      expect(await store.ping()).toBe(false);
      expect(await keysMatching(admin, `${ownPrefix}*`)).toEqual([]);
    } finally {
      await removeAll(admin, `${ownPrefix}*`);
      admin.disconnect();
      client.disconnect();
    }
  });
});
