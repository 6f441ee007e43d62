import { describe, expect, it } from 'vitest';
import { MemorySessionStore } from '../../../src/sessions/memory-session-store.ts';
import type { SessionStore } from '../../../src/sessions/session-store.ts';
import { sessionStoreContract } from './session-store-contract.ts';

// Every opened view shares one store, as several Redis connections share one server; closing a view keeps the data.
const shared = new MemorySessionStore();

function view(): SessionStore {
  return {
    create: (input) => shared.create(input),
    get: (id) => shared.get(id),
    delete: (id) => shared.delete(id),
    addFact: (id, input) => shared.addFact(id, input),
    retractFact: (id, factId, input) => shared.retractFact(id, factId, input),
    ping: () => shared.ping(),
    close: async () => {},
  };
}

sessionStoreContract('in-process', {
  open: async () => view(),
  cleanup: () => shared.close(),
});

describe('in-process session store memory', () => {
  it('lets go of expired sessions nobody asks for again, keeping the live ones', async () => {
    let clock = 1_000_000;
    const store = new MemorySessionStore({ clock: () => clock });
    try {
      for (let i = 0; i < 3; i += 1) await store.create({ id: `gone-${i}`, rulesetId: 'rs', ttlSeconds: 1, now: clock });
      await store.create({ id: 'kept', rulesetId: 'rs', ttlSeconds: 60, now: clock });
      expect(store.sweepExpired()).toBe(0);
      clock += 2_000;
      expect(store.sweepExpired()).toBe(3);
      expect(store.sweepExpired()).toBe(0);
      expect(await store.get('kept')).toMatchObject({ id: 'kept' });
    } finally {
      await store.close();
    }
  });
});

describe('in-process session store expiry', () => {
  const T0 = Date.parse('2026-01-01T00:00:00Z');
  const none = (): number[] => [];

  // One process, one clock: the writes' now decides (the Redis store decides on Redis's clock, which its keys expire by).
  it('keeps the session a whole TTL past every write, moving expiresAt to now + ttl + ttl / 16 when less is left', async () => {
    const store = new MemorySessionStore({ clock: () => T0 });
    try {
      await store.create({ id: 's', rulesetId: 'rs-1', ttlSeconds: 16, now: T0 });
      const add = (factId: string, now: number) =>
        store.addFact('s', { factId, fact: { factId }, eventTimeMs: now, contributions: [], specs: [], now, maxFacts: 10, fire: none });
      // 16 s TTL: 15 s left at the first write, so the expiry moves to 17 s past it.
      await add('a', T0 + 1000);
      expect((await store.get('s'))?.expiresAt).toBe(T0 + 18_000);
      // A whole TTL still left: nothing to move.
      await add('b', T0 + 1001);
      expect((await store.get('s'))?.expiresAt).toBe(T0 + 18_000);
      // A duplicate keeps the session alive by the same rule.
      await add('b', T0 + 2000);
      expect((await store.get('s'))?.expiresAt).toBe(T0 + 18_000);
      await add('b', T0 + 2001);
      expect((await store.get('s'))?.expiresAt).toBe(T0 + 19_001);
      expect((await store.get('s'))?.facts).toEqual({ a: { factId: 'a' }, b: { factId: 'b' } });
    } finally {
      await store.close();
    }
  });
});
