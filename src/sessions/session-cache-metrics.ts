// Prometheus series for the Redis session store's cache of working-memory copies, read at scrape time.
import { Counter, Gauge, type Registry } from 'prom-client';
import type { SessionCacheStats } from './redis-session-store.ts';

export function registerSessionCacheMetrics(registry: Registry, cache: { cacheStats(): SessionCacheStats }): void {
  new Counter({
    name: 'rules_session_cache_reads_total',
    help: 'Session working memories read whole from Redis for want of a current copy; outcome let_go: not kept, the cache being full of sessions written more often.',
    labelNames: ['outcome'],
    registers: [registry],
    collect() {
      const { reads, readsLetGo } = cache.cacheStats();
      this.reset();
      this.inc({ outcome: 'cached' }, reads - readsLetGo);
      this.inc({ outcome: 'let_go' }, readsLetGo);
    },
  });
  new Gauge({
    name: 'rules_session_cache_facts',
    help: 'Facts in the working-memory copies this instance keeps (RULES_SESSION_CACHE_FACTS bounds them with one per session).',
    registers: [registry],
    collect() {
      this.set(cache.cacheStats().facts);
    },
  });
  new Gauge({
    name: 'rules_session_cache_sessions',
    help: 'Sessions whose working memory this instance keeps a copy of.',
    registers: [registry],
    collect() {
      this.set(cache.cacheStats().sessions);
    },
  });
}
