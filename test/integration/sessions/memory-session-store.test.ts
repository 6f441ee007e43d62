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
