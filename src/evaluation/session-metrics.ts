// Feeds the engine collector's session signals from the session writes this instance answers, in bounded memory.
import type { EngineMetrics } from '../engine/index.ts';
import type { SessionWriteObserver } from './session-evaluator.ts';

export interface SessionMemoryMetricsOptions {
  metrics: Pick<EngineMetrics, 'trackWorkingMemory' | 'recordNodeMemory'>;
  /** A session not written for this long drops out of working_memory_size; default one hour (the default session TTL). */
  idleMs?: number;
  /** Most sessions tracked; beyond it the least recently written drop out. Default 10,000. */
  maxSessions?: number;
  /** Epoch ms; default Date.now. */
  clock?: () => number;
}

interface Tracked {
  factCount: number;
  at: number;
}

/**
 * working_memory_size: the sum of the last fact_count of every session this instance wrote to within `idleMs` (at most
 * `maxSessions` of them), as of each read; null before the first write or delete. node_memory.hit_rate: the share of
 * session writes whose fired set did not change (no activated, no deactivated rule), i.e. those a streaming consumer
 * gets no message for.
 */
export class SessionMemoryMetrics implements SessionWriteObserver {
  readonly #metrics: SessionMemoryMetricsOptions['metrics'];
  readonly #idleMs: number;
  readonly #maxSessions: number;
  readonly #clock: () => number;
  // Insertion order is write order: every write re-inserts its session, so the oldest entries come first.
  readonly #sessions = new Map<string, Tracked>();
  #total = 0;
  #reported = false;

  constructor(options: SessionMemoryMetricsOptions) {
    this.#metrics = options.metrics;
    this.#idleMs = options.idleMs ?? 3_600_000;
    this.#maxSessions = options.maxSessions ?? 10_000;
    this.#clock = options.clock ?? Date.now;
    // Read at scrape time: sessions no longer written age out even when no write comes to prune them.
    this.#metrics.trackWorkingMemory(() => {
      if (!this.#reported) return null;
      this.#prune(this.#clock());
      return this.#total;
    });
  }

  written(sessionId: string, factCount: number, changed: boolean): void {
    const now = this.#clock();
    this.#remove(sessionId);
    this.#sessions.set(sessionId, { factCount, at: now });
    this.#total += factCount;
    this.#reported = true;
    this.#prune(now);
    this.#metrics.recordNodeMemory(!changed);
  }

  deleted(sessionId: string): void {
    this.#remove(sessionId);
    this.#reported = true;
  }

  #remove(sessionId: string): void {
    const tracked = this.#sessions.get(sessionId);
    if (tracked === undefined) return;
    this.#total -= tracked.factCount;
    this.#sessions.delete(sessionId);
  }

  #prune(now: number): void {
    for (const [sessionId, tracked] of this.#sessions) {
      if (this.#sessions.size <= this.#maxSessions && tracked.at >= now - this.#idleMs) break;
      this.#remove(sessionId);
    }
  }
}
