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
