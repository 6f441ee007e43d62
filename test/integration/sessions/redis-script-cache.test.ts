// EVALSHA falls back to EVAL: a server that lost its script cache (restart, failover, SCRIPT FLUSH) keeps working.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { MemorySessionStore } from '../../../src/sessions/memory-session-store.ts';
import { openSessionStore } from '../../../src/sessions/open-session-store.ts';
import { RedisSessionStore } from '../../../src/sessions/redis-session-store.ts';

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = `test:${randomUUID()}:`;
const T0 = Date.parse('2026-01-01T00:00:00Z');

describe('Redis session store scripts', () => {
  const admin = new Redis(url);
  afterAll(async () => {
    const keys = await admin.keys(`${prefix}*`);
    if (keys.length > 0) await admin.del(...keys);
    admin.disconnect();
  });

  it('still runs after the server flushed its script cache', async () => {
    const store = await openSessionStore({ redisUrl: url, keyPrefix: prefix });
    try {
      expect(store).toBeInstanceOf(RedisSessionStore);
      await store.create({ id: 's', rulesetId: 'rs', ttlSeconds: 60, now: T0 });
      const add = (factId: string) =>
        store.addFact('s', {
          factId,
          fact: {},
          eventTimeMs: T0,
          contributions: [{ accumulatorId: 'n', value: 1 }],
          specs: [{ id: 'n', fn: 'count' }],
          now: T0,
          maxFacts: 10,
          fire: () => [],
        });
      await add('a');
      await admin.script('FLUSH');
      expect((await add('b'))?.aggregates).toEqual({ n: 2 });
      const keys = await admin.keys(`${prefix}*`);
      expect(keys.length).toBeGreaterThan(0);
      expect(keys.every((k) => k.startsWith(`${prefix}session:{s}:`))).toBe(true);
    } finally {
      await store.close();
    }
  });

  it('opens the in-process store when no Redis URL is configured', async () => {
    const store = await openSessionStore({});
    expect(store).toBeInstanceOf(MemorySessionStore);
    await store.close();
  });
});
