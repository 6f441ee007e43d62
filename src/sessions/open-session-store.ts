// Picks the session store: Redis when a URL is configured (shared by all instances), else in-process (one instance).
import { MemorySessionStore } from './memory-session-store.ts';
import { openRedisSessionStore } from './redis-session-store.ts';
import type { SessionStore } from './session-store.ts';

export interface OpenSessionStoreOptions {
  /** REDIS_URL; absent: in-process store. */
  readonly redisUrl?: string | undefined;
  /** Prefix for every Redis key; default `rules:`. */
  readonly keyPrefix?: string;
  readonly connectTimeoutMs?: number;
  /** REDIS_COMMAND_TIMEOUT: how long a Redis command may go unanswered. */
  readonly commandTimeoutMs?: number;
  /** Facts the Redis store may keep cached (RULES_SESSION_CACHE_FACTS). */
  readonly cacheFacts?: number;
  readonly onError?: (error: Error) => void;
  /** The Redis connection is ready again after it was lost. */
  readonly onReconnect?: () => void;
}

export async function openSessionStore(options: OpenSessionStoreOptions): Promise<SessionStore> {
  if (options.redisUrl === undefined) return new MemorySessionStore();
  return openRedisSessionStore({
    url: options.redisUrl,
    keyPrefix: options.keyPrefix ?? 'rules:',
    ...(options.connectTimeoutMs === undefined ? {} : { connectTimeoutMs: options.connectTimeoutMs }),
    ...(options.commandTimeoutMs === undefined ? {} : { commandTimeoutMs: options.commandTimeoutMs }),
    ...(options.onError === undefined ? {} : { onError: options.onError }),
    ...(options.onReconnect === undefined ? {} : { onReconnect: options.onReconnect }),
    ...(options.cacheFacts === undefined ? {} : { cacheFacts: options.cacheFacts }),
  });
}
