// The store's public surface: open it, then use the interfaces from types.ts.
export { MAX_PAGE_LIMIT } from './cursor.ts';
export { backlogWeight, executionBacklog } from './executions-repository.ts';
export { type OpenStoreOptions, openStore, type SqlStore } from './open-store.ts';
export type * from './types.ts';
