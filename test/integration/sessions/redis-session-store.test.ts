import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionKeys, valueKey, windowKey } from '../../../src/sessions/keys.ts';
import { MemorySessionStore } from '../../../src/sessions/memory-session-store.ts';
import { openRedisSessionStore, type RedisSessionStore } from '../../../src/sessions/redis-session-store.ts';
import { sessionStoreContract } from './session-store-contract.ts';

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = `test:${randomUUID()}:`;

async function removeAll(admin: Redis, pattern: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await admin.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await admin.del(...keys);
  } while (cursor !== '0');
}

async function keysMatching(admin: Redis, pattern: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await admin.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
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

describe('Redis session store change per fact id', () => {
  let store: RedisSessionStore;
  let admin: Redis;
  const changesPrefix = storeUnderOwnPrefix((opened, connection) => {
    store = opened;
    admin = connection;
  });

  it('keeps it in the session hash-tagged changes hash, expiring with the session, until retract or delete', async () => {
    const id = `s-${randomUUID()}`;
    const now = Date.now();
    await store.create({ id, rulesetId: 'rs-1', ttlSeconds: 600, now });
    const base = { fact: { n: 1 }, eventTimeMs: now, contributions: [], specs: [], now, maxFacts: 10 };
    const a = await store.addFact(id, { ...base, factId: 'a' });
    await store.setFired(id, [4, 5], a?.version ?? -1, 'a');
    const b = await store.addFact(id, { ...base, factId: 'b' });
    await store.setFired(id, [5], b?.version ?? -1, 'b');

    const keys = sessionKeys(changesPrefix, id);
    expect(keys.changes).toBe(`${changesPrefix}session:{${id}}:changes`);
    expect(await admin.hgetall(keys.changes)).toEqual({
      a: '{"activated":[4,5],"deactivated":[]}',
      b: '{"activated":[],"deactivated":[4]}',
    });
    const ttl = await admin.pttl(keys.changes);
    expect(ttl).toBeGreaterThan(590_000);
    expect(ttl).toBeLessThanOrEqual(600_000);

    await store.retractFact(id, 'a', { specs: [], now });
    expect(await admin.hkeys(keys.changes)).toEqual(['b']);
    expect(await keysMatching(admin, `${changesPrefix}session:{${id}}:*`)).toContain(keys.changes);
    expect(await store.delete(id)).toBe(true);
    expect(await keysMatching(admin, `${changesPrefix}session:{${id}}*`)).toEqual([]);
  });
});

describe('Redis session store TTLs', () => {
  let store: RedisSessionStore;
  let admin: Redis;
  const ttlPrefix = storeUnderOwnPrefix((opened, connection) => {
    store = opened;
    admin = connection;
  });

  it('gives every key a write creates the session TTL even when the write does not refresh it', async () => {
    const id = `s-${randomUUID()}`;
    const now = Date.now();
    await store.create({ id, rulesetId: 'rs-1', ttlSeconds: 600, now });
    const specs = [
      { id: 'n', fn: 'count' as const, windowMs: 60_000 },
      { id: 'hi', fn: 'max' as const },
    ];
    const add = (factId: string, at: number) =>
      store.addFact(id, {
        factId,
        fact: { factId, at },
        eventTimeMs: at,
        contributions: [
          { accumulatorId: 'n', value: 1 },
          { accumulatorId: 'hi', value: at - now },
        ],
        specs,
        now: at,
        maxFacts: 10,
      });
    // Written at creation time: nothing is refreshed, yet facts, contributions, totals, accs and sorted sets are new.
    await add('a', now);
    // Retracting the only fact empties every key; adding again (still no refresh) creates them anew.
    await store.retractFact(id, 'a', { specs, now: now + 1 });
    await add('b', now + 2);
    const keys = sessionKeys(ttlPrefix, id);
    const all = [
      keys.meta,
      keys.facts,
      keys.contributions,
      keys.totals,
      keys.accumulators,
      windowKey(ttlPrefix, id, 'n'),
      valueKey(ttlPrefix, id, 'hi'),
    ];
    for (const key of all) {
      const ttl = await admin.pttl(key);
      expect({ key, live: ttl > 590_000 && ttl <= 600_000 }).toEqual({ key, live: true });
    }
    expect((await store.get(id))?.expiresAt).toBe(now + 600_000);
    expect(await keysMatching(admin, `${ttlPrefix}session:{${id}}:*`)).toEqual([...all].sort());
    // Another specs list registers its ids once, so delete still finds every sorted set.
    const lows = [{ id: 'lo', fn: 'min' as const }];
    const low = {
      fact: { low: true },
      eventTimeMs: now,
      contributions: [{ accumulatorId: 'lo', value: 3 }],
      specs: lows,
      now,
      maxFacts: 10,
    };
    await store.addFact(id, { ...low, factId: 'c' });
    await store.addFact(id, { ...low, factId: 'd' });
    expect((await admin.smembers(keys.accumulators)).sort()).toEqual(['hi', 'lo', 'n']);
    expect(await admin.pttl(valueKey(ttlPrefix, id, 'lo'))).toBeGreaterThan(590_000);
    expect(await store.delete(id)).toBe(true);
    expect(await keysMatching(admin, `${ttlPrefix}session:{${id}}*`)).toEqual([]);
  });

  it('evicts and retracts window members of the older layout (a bare fact id, its value in the contributions hash)', async () => {
    const id = `s-${randomUUID()}`;
    const now = Date.now();
    await store.create({ id, rulesetId: 'rs-1', ttlSeconds: 600, now });
    const specs = [
      { id: 'spend', fn: 'sum' as const, windowMs: 60_000 },
      { id: 'top', fn: 'max' as const, windowMs: 60_000 },
    ];
    const keys = sessionKeys(ttlPrefix, id);
    // What an earlier version stored for two facts at `now` worth 5 and 7.
    for (const [factId, amount] of [
      ['a', '5'],
      ['b', '7'],
    ] as const) {
      await admin.hset(keys.facts, factId, JSON.stringify({ amount: Number(amount) }));
      await admin.hset(
        keys.contributions,
        factId,
        JSON.stringify({
          t: String(now),
          c: [
            ['spend', amount],
            ['top', amount],
          ],
        }),
      );
      await admin.zadd(windowKey(ttlPrefix, id, 'spend'), now, factId);
      await admin.zadd(windowKey(ttlPrefix, id, 'top'), now, factId);
      await admin.zadd(valueKey(ttlPrefix, id, 'top'), amount, factId);
    }
    await admin.hset(keys.totals, 'spend:n', '2', 'spend:s', '12');
    const retracted = await store.retractFact(id, 'b', { specs, now });
    expect(retracted?.aggregates).toEqual({ spend: 5, top: 5 });
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
    });
    expect(added?.aggregates).toEqual({ spend: 7, top: 5 });
    // 'a' leaves both windows; only 'c' (stored in the new layout) is left.
    const later = await store.retractFact(id, 'none', { specs, now: now + 61_000 });
    expect(later?.aggregates).toEqual({ spend: 2, top: 2 });
    expect(await admin.zrange(windowKey(ttlPrefix, id, 'spend'), '0', '-1')).toEqual(['c|2']);
  });
});

describe('Redis session store totals', () => {
  let store: RedisSessionStore;
  let admin: Redis;
  const totalsPrefix = storeUnderOwnPrefix((opened, connection) => {
    store = opened;
    admin = connection;
  });
  const specs = [
    { id: 'n', fn: 'count' as const },
    { id: 'spend', fn: 'sum' as const },
    { id: 'mean', fn: 'avg' as const, windowMs: 60_000 },
  ];

  async function open(now: number): Promise<string> {
    const id = `s-${randomUUID()}`;
    await store.create({ id, rulesetId: 'rs-1', ttlSeconds: 600, now });
    return id;
  }

  const add = (id: string, factId: string, amount: number, now: number) =>
    store.addFact(id, {
      factId,
      fact: { amount },
      eventTimeMs: now,
      contributions: [
        { accumulatorId: 'n', value: 1 },
        { accumulatorId: 'spend', value: amount },
        { accumulatorId: 'mean', value: amount },
      ],
      specs,
      now,
      maxFacts: 10,
    });

  it('stores doubles an older version can still add to with HINCRBYFLOAT, and leaves no sum once emptied', async () => {
    const now = Date.now();
    const id = await open(now);
    await add(id, 'a', 0.1, now);
    const two = await add(id, 'b', 0.2, now);
    // Summed as doubles, as in the in-process store.
    expect(two?.aggregates).toEqual({ n: 2, spend: 0.1 + 0.2, mean: (0.1 + 0.2) / 2 });
    const keys = sessionKeys(totalsPrefix, id);
    expect(await admin.hmget(keys.totals, 'n:n', 'spend:n', 'spend:s')).toEqual(['2', '2', '0.30000000000000004']);
    expect(Number(await admin.hincrbyfloat(keys.totals, 'spend:s', '0.5'))).toBeCloseTo(0.8, 12);
    await store.retractFact(id, 'a', { specs, now });
    const empty = await store.retractFact(id, 'b', { specs, now });
    expect(empty?.aggregates).toEqual({ n: 0, spend: 0, mean: null });
    expect(await admin.hgetall(keys.totals)).toEqual({});
  });

  it('reads long double text an earlier version wrote with HINCRBYFLOAT', async () => {
    const now = Date.now();
    const id = await open(now);
    const keys = sessionKeys(totalsPrefix, id);
    await admin.hset(keys.facts, 'a', '{"amount":0.1}', 'b', '{"amount":0.2}');
    await admin.hset(
      keys.contributions,
      'a',
      JSON.stringify({
        t: String(now),
        c: [
          ['n', '1'],
          ['spend', '0.1'],
          ['mean', '0.1'],
        ],
      }),
    );
    await admin.hset(
      keys.contributions,
      'b',
      JSON.stringify({
        t: String(now),
        c: [
          ['n', '1'],
          ['spend', '0.2'],
          ['mean', '0.2'],
        ],
      }),
    );
    await admin.zadd(windowKey(totalsPrefix, id, 'mean'), now, 'a|0.1', now, 'b|0.2');
    // HINCRBYFLOAT's own text for 0.1 + 0.2 in long double.
    await admin.hset(keys.totals, 'n:n', '2', 'spend:n', '2', 'spend:s', '0.3', 'mean:n', '2', 'mean:s', '0.30000000000000000');
    const added = await add(id, 'c', 1, now);
    expect(added?.aggregates).toEqual({ n: 3, spend: 0.3 + 1, mean: (0.3 + 1) / 3 });
    const retracted = await store.retractFact(id, 'c', { specs, now });
    expect(retracted?.aggregates).toEqual({ n: 2, spend: 0.3 + 1 - 1, mean: (0.3 + 1 - 1) / 2 });
  });

  it('keeps a sum past the double range in long double as before: Infinity while it lasts, finite again once it shrinks', async () => {
    const now = Date.now();
    const id = await open(now);
    const keys = sessionKeys(totalsPrefix, id);
    expect((await add(id, 'a', 1e308, now))?.aggregates).toEqual({ n: 1, spend: 1e308, mean: 1e308 });
    expect((await add(id, 'b', 1e308, now))?.aggregates).toEqual({ n: 2, spend: Infinity, mean: Infinity });
    // Stored as HINCRBYFLOAT writes it (finite long double text), so an older version can still add to it.
    expect(Number(await admin.hget(keys.totals, 'spend:s'))).toBe(Infinity);
    expect(Number(await admin.hincrbyfloat(keys.totals, 'spend:s', '0'))).toBe(Infinity);
    const back = await store.retractFact(id, 'b', { specs, now });
    expect(back?.aggregates.n).toBe(1);
    expect((back?.aggregates.spend ?? 0) / 1e308).toBeCloseTo(1, 12);
    expect((back?.aggregates.mean ?? 0) / 1e308).toBeCloseTo(1, 12);
    // Back in range: summed as a double again.
    const more = await add(id, 'c', -1e308, now);
    expect(more?.aggregates.n).toBe(2);
    expect(Math.abs(more?.aggregates.spend ?? 1)).toBeLessThan(1e293);
    await store.retractFact(id, 'a', { specs, now });
    await store.retractFact(id, 'c', { specs, now });
    expect(await admin.hgetall(keys.totals)).toEqual({});
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
            const input = {
              factId: s.factId,
              fact: { value: s.value, at: now - s.ageMs },
              eventTimeMs: now - s.ageMs,
              contributions: specs.map((spec) => ({ accumulatorId: spec.id, value: s.value })),
              specs,
              now,
              maxFacts: 100,
            };
            const [redis, local] = [await store.addFact(id, input), await memory.addFact(id, input)];
            expect(redis).toEqual(local);
          } else {
            const [redis, local] = [
              await store.retractFact(id, s.factId, { specs, now }),
              await memory.retractFact(id, s.factId, { specs, now }),
            ];
            expect(redis).toEqual(local);
          }
          // No key of the session may live on without its TTL.
          for (const key of await keysMatching(admin, `${differentialPrefix}session:{${id}}*`))
            expect(await admin.pttl(key), key).toBeGreaterThan(0);
        }
        await store.delete(id);
      }),
      { numRuns: 60 },
    );
  });
});
