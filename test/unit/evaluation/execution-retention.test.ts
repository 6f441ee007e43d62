import { describe, expect, it } from 'vitest';
import { startExecutionRetention } from '../../../src/evaluation/execution-retention.ts';

describe('startExecutionRetention', () => {
  it('deletes executions older than the retention, measured from now', async () => {
    const cutoffs: Date[] = [];
    const deleted: number[] = [];
    const retention = startExecutionRetention({
      executions: {
        deleteOlderThan: async (cutoff) => {
          cutoffs.push(cutoff);
          return 4;
        },
      },
      retentionMs: 86_400_000,
      intervalMs: 3_600_000,
      now: () => Date.UTC(2025, 0, 2),
      onDeleted: (count) => deleted.push(count),
    });
    expect(await retention.runOnce()).toBe(4);
    await retention.stop();
    expect(cutoffs).toEqual([new Date(Date.UTC(2025, 0, 1))]);
    expect(deleted).toEqual([4]);
  });

  it('shares one cleanup between overlapping calls', async () => {
    let calls = 0;
    let release: (count: number) => void = () => undefined;
    const retention = startExecutionRetention({
      executions: {
        deleteOlderThan: () => {
          calls += 1;
          return new Promise<number>((resolve) => {
            release = resolve;
          });
        },
      },
      retentionMs: 1_000,
      intervalMs: 60_000,
    });
    const first = retention.runOnce();
    const second = retention.runOnce();
    release(2);
    expect(await first).toBe(2);
    expect(await second).toBe(2);
    expect(calls).toBe(1);
    await retention.stop();
  });

  it('runs on its interval and reports failures without stopping', async () => {
    const errors: unknown[] = [];
    let calls = 0;
    const retention = startExecutionRetention({
      executions: {
        deleteOlderThan: async () => {
          calls += 1;
          if (calls === 1) throw new Error('database down');
          return 0;
        },
      },
      retentionMs: 1_000,
      intervalMs: 5,
      onError: (error) => errors.push(error),
    });
    await new Promise<void>((resolve) => {
      const poll = setInterval(() => {
        if (calls >= 2) {
          clearInterval(poll);
          resolve();
        }
      }, 1);
    });
    await retention.stop();
    expect(errors).toHaveLength(1);
    expect(calls).toBeGreaterThanOrEqual(2);
  });

  it('runs a first cleanup soon after start, not an interval later, so frequent restarts still delete', async () => {
    let calls = 0;
    const retention = startExecutionRetention({
      executions: {
        deleteOlderThan: async () => {
          calls += 1;
          return 0;
        },
      },
      retentionMs: 1_000,
      intervalMs: 3_600_000,
      firstRunMs: 10,
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    await retention.stop();
    expect(calls).toBe(1);
  });
});
