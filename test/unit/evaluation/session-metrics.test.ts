import { describe, expect, it } from 'vitest';
import { EngineMetrics } from '../../../src/engine/index.ts';
import { SessionMemoryMetrics } from '../../../src/evaluation/session-metrics.ts';

function tracker(options: { idleMs?: number; maxSessions?: number } = {}) {
  let now = 1_000_000;
  const metrics = new EngineMetrics();
  const sessions = new SessionMemoryMetrics({ metrics, clock: () => now, ...options });
  return { metrics, sessions, advance: (ms: number) => (now += ms) };
}

describe('SessionMemoryMetrics', () => {
  it('reports nothing before the first session write', () => {
    const { metrics } = tracker();
    expect(metrics.snapshot()).toMatchObject({ working_memory_size: null, node_memory: { hit_rate: null } });
  });

  it('sums the last fact_count of each session written, replacing a session’s earlier count', () => {
    const { metrics, sessions } = tracker();
    sessions.written('a', 1, true);
    sessions.written('b', 4, true);
    sessions.written('a', 2, false);
    expect(metrics.snapshot().working_memory_size).toBe(6);
  });

  it('drops a deleted session from the sum', () => {
    const { metrics, sessions } = tracker();
    sessions.written('a', 3, true);
    sessions.written('b', 5, true);
    sessions.deleted('a');
    sessions.deleted('never-written');
    expect(metrics.snapshot().working_memory_size).toBe(5);
  });

  it('drops sessions not written within the idle time, and the least recently written beyond the cap', () => {
    const idle = tracker({ idleMs: 1_000 });
    idle.sessions.written('old', 10, true);
    idle.advance(1_001);
    idle.sessions.written('new', 2, true);
    expect(idle.metrics.snapshot().working_memory_size).toBe(2);

    const capped = tracker({ maxSessions: 2 });
    capped.sessions.written('a', 1, true);
    capped.sessions.written('b', 10, true);
    capped.sessions.written('a', 1, true);
    capped.sessions.written('c', 100, true);
    // b was the least recently written.
    expect(capped.metrics.snapshot().working_memory_size).toBe(101);
  });

  it('ages out idle sessions when read, with no write to prune them', () => {
    const { metrics, sessions, advance } = tracker({ idleMs: 1_000 });
    sessions.written('a', 3, true);
    sessions.written('b', 5, true);
    advance(600);
    sessions.written('b', 6, true);
    advance(600);
    expect(metrics.snapshot().working_memory_size).toBe(6);
    advance(1_000);
    expect(metrics.snapshot().working_memory_size).toBe(0);
  });

  it('reports 0, not nothing, once the only session this instance knew is deleted', () => {
    const { metrics, sessions } = tracker();
    sessions.deleted('a');
    expect(metrics.snapshot().working_memory_size).toBe(0);
  });

  it('counts as a node-memory hit every write whose fired set did not change', () => {
    const { metrics, sessions } = tracker();
    sessions.written('a', 1, false);
    sessions.written('a', 2, false);
    sessions.written('a', 3, true);
    sessions.written('a', 4, false);
    expect(metrics.snapshot().node_memory.hit_rate).toBe(0.75);
  });
});
