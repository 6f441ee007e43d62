import { describe, expect, it } from 'vitest';
import { EngineMetrics, LATENCY_SAMPLES } from '../../../src/engine/index.ts';

describe('EngineMetrics', () => {
  it('reports nulls and zero evaluations before anything is recorded', () => {
    expect(new EngineMetrics().snapshot()).toEqual({
      candidates_per_fact_out: null,
      alpha_prune_ratio: null,
      eval_latency_ms_p95: null,
      linked_rules_avg: null,
      working_memory_size: null,
      node_memory: { hit_rate: null },
      evaluations: 0,
    });
  });

  it('averages candidates per fact and derives the prune ratio from rules in scope', () => {
    const metrics = new EngineMetrics();
    metrics.record(2, 100, 0.5);
    metrics.record(4, 100, 0.5);
    const snapshot = metrics.snapshot();
    expect(snapshot.candidates_per_fact_out).toBe(3);
    expect(snapshot.alpha_prune_ratio).toBeCloseTo(0.97);
    expect(snapshot.evaluations).toBe(2);
  });

  it('computes the p95 latency over the most recent samples only (bounded memory)', () => {
    const metrics = new EngineMetrics();
    for (let i = 0; i < LATENCY_SAMPLES; i++) metrics.record(0, 1, 1_000);
    for (let i = 1; i <= LATENCY_SAMPLES; i++) metrics.record(0, 1, i / 100);
    expect(metrics.snapshot().eval_latency_ms_p95).toBe(Math.ceil(0.95 * LATENCY_SAMPLES) / 100);
    expect(metrics.snapshot().evaluations).toBe(2 * LATENCY_SAMPLES);
  });

  it('keeps the session signals and the sharing of the last compiled engine', () => {
    const metrics = new EngineMetrics();
    metrics.recordCompile(2.5);
    metrics.trackWorkingMemory(() => 12);
    metrics.recordNodeMemory(true);
    metrics.recordNodeMemory(true);
    metrics.recordNodeMemory(false);
    metrics.recordNodeMemory(true);
    expect(metrics.snapshot()).toMatchObject({ linked_rules_avg: 2.5, working_memory_size: 12, node_memory: { hit_rate: 0.75 } });
  });

  it('forgets everything on reset', () => {
    const metrics = new EngineMetrics();
    metrics.record(1, 2, 3);
    metrics.recordCompile(1);
    metrics.reset();
    expect(metrics.snapshot().evaluations).toBe(0);
    expect(metrics.snapshot().linked_rules_avg).toBeNull();
    expect(metrics.snapshot().eval_latency_ms_p95).toBeNull();
  });
});
