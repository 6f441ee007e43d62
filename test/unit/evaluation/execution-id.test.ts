import { describe, expect, it } from 'vitest';
import { executionIdTime, newExecutionId } from '../../../src/evaluation/execution-id.ts';

describe('newExecutionId', () => {
  it('is a UUID v7 with the RFC 9562 variant', () => {
    expect(newExecutionId()).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('carries the Unix milliseconds in its first 48 bits', () => {
    const at = Date.UTC(2025, 0, 31, 12, 0, 0, 123);
    const id = newExecutionId(at);
    expect(Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16)).toBe(at);
  });

  it('sorts by time and never repeats', () => {
    const earlier = newExecutionId(1_000);
    const later = newExecutionId(2_000);
    expect(earlier < later).toBe(true);
    const ids = new Set(Array.from({ length: 10_000 }, () => newExecutionId(5_000)));
    expect(ids.size).toBe(10_000);
  });

  it('draws every random digit afresh, past refills of its random pool', () => {
    const ids = Array.from({ length: 2_000 }, () => newExecutionId(5_000));
    for (const position of [15, 16, 17, 19, 20, 21, 22, 24, 30, 35]) {
      expect(new Set(ids.map((id) => id[position])).size, `position ${position}`).toBeGreaterThan(position === 19 ? 3 : 12);
    }
    expect(new Set(ids.map((id) => id.slice(0, 14))).size).toBe(1);
  });
});

describe('executionIdTime', () => {
  it('reads the milliseconds back from a UUID v7 in either case, and nothing from other ids', () => {
    const at = Date.UTC(2026, 10, 25, 21, 0, 0, 7);
    const id = newExecutionId(at);
    expect(executionIdTime(id)).toBe(at);
    expect(executionIdTime(id.toUpperCase())).toBe(at);
    expect(executionIdTime('8f14e45f-ceea-467f-a8f6-3b1e2f4c9d10')).toBeUndefined();
    expect(executionIdTime(id.slice(1))).toBeUndefined();
  });
});
