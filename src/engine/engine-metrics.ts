// Opt-in, bounded, advisory engine metrics: constant memory whatever the traffic; nothing is exported from here.

export interface EngineMetricsSnapshot {
  /** Average number of candidate rules per fact: those the index did not rule out (it confirmed them, or a residual check ran). */
  candidates_per_fact_out: number | null;
  /** 1 - candidates / rules in scope: the share of rules the index ruled out without running them. */
  alpha_prune_ratio: number | null;
  /** 95th percentile of the last LATENCY_SAMPLES evaluation latencies. */
  eval_latency_ms_p95: number | null;
  /** Average number of rules linked to each distinct indexed test (sharing), for the last compiled engine; null without tests. */
  linked_rules_avg: number | null;
  /** Facts held by session working memory, read from the tracker at each snapshot. */
  working_memory_size: number | null;
  node_memory: { hit_rate: number | null };
  evaluations: number;
}

/** Latencies kept for the percentile: a ring of the most recent ones. */
export const LATENCY_SAMPLES = 1_024;

export class EngineMetrics {
  #evaluations = 0;
  #candidates = 0;
  #inScope = 0;
  readonly #latencies = new Float64Array(LATENCY_SAMPLES);
  #latencyCount = 0;
  #latencyNext = 0;
  #linkedRulesAvg: number | null = null;
  #workingMemorySize: () => number | null = () => null;
  #nodeMemoryHits = 0;
  #nodeMemoryLookups = 0;

  /** Called by evaluate for each fact: candidate rules (not ruled out by the index), rules in scope, latency. */
  record(candidates: number, rulesInScope: number, latencyMs: number): void {
    this.#evaluations += 1;
    this.#candidates += candidates;
    this.#inScope += rulesInScope;
    this.#latencies[this.#latencyNext] = latencyMs;
    this.#latencyNext = (this.#latencyNext + 1) % LATENCY_SAMPLES;
    if (this.#latencyCount < LATENCY_SAMPLES) this.#latencyCount += 1;
  }

  /** Called when an engine is compiled with this collector. */
  recordCompile(linkedRulesAvg: number | null): void {
    this.#linkedRulesAvg = linkedRulesAvg;
  }

  /** Sessions say how to count the facts their working memory holds: read at each snapshot, so idle sessions age out. */
  trackWorkingMemory(size: () => number | null): void {
    this.#workingMemorySize = size;
  }

  /** Sessions report whether a node-memory lookup was served from memory. */
  recordNodeMemory(hit: boolean): void {
    this.#nodeMemoryLookups += 1;
    if (hit) this.#nodeMemoryHits += 1;
  }

  snapshot(): EngineMetricsSnapshot {
    const evaluations = this.#evaluations;
    return {
      candidates_per_fact_out: evaluations === 0 ? null : this.#candidates / evaluations,
      alpha_prune_ratio: this.#inScope === 0 ? null : 1 - this.#candidates / this.#inScope,
      eval_latency_ms_p95: this.#p95(),
      linked_rules_avg: this.#linkedRulesAvg,
      working_memory_size: this.#workingMemorySize(),
      node_memory: { hit_rate: this.#nodeMemoryLookups === 0 ? null : this.#nodeMemoryHits / this.#nodeMemoryLookups },
      evaluations,
    };
  }

  /** Forgets everything recorded so far. */
  reset(): void {
    this.#evaluations = 0;
    this.#candidates = 0;
    this.#inScope = 0;
    this.#latencyCount = 0;
    this.#latencyNext = 0;
    this.#linkedRulesAvg = null;
    this.#workingMemorySize = () => null;
    this.#nodeMemoryHits = 0;
    this.#nodeMemoryLookups = 0;
  }

  #p95(): number | null {
    if (this.#latencyCount === 0) return null;
    const sorted = this.#latencies.slice(0, this.#latencyCount).sort();
    return sorted[Math.min(sorted.length - 1, Math.ceil(0.95 * sorted.length) - 1)]!;
  }
}
