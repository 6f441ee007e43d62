// Drives an async operation with a fixed number in flight and times every call: latency percentiles and ops/s together.
import { cpuUsage, hrtime } from 'node:process';
import { percentile } from './timing.ts';

export interface LoadResult {
  operations: number;
  opsPerSecond: number;
  p50Us: number;
  p99Us: number;
  /** CPU time (user + system) of this process per operation, µs: the client's own cost, whatever the wait. */
  cpuUsPerOp: number;
}

/**
 * Runs `operation(0..total-1)` with `inFlight` calls outstanding at any time (1: strictly sequential). Each call's
 * latency runs from its start to its settling, so under concurrency it includes the wait behind the others.
 */
export async function runLoad(total: number, inFlight: number, operation: (index: number) => Promise<unknown>): Promise<LoadResult> {
  if (!Number.isInteger(total) || total < 1) throw new RangeError(`total must be a positive integer, got ${total}`);
  if (!Number.isInteger(inFlight) || inFlight < 1) throw new RangeError(`inFlight must be a positive integer, got ${inFlight}`);
  const samples = new Float64Array(total);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < total) {
      const index = next;
      next += 1;
      const start = hrtime.bigint();
      await operation(index);
      samples[index] = Number(hrtime.bigint() - start) / 1_000;
    }
  };
  const cpu = cpuUsage();
  const started = hrtime.bigint();
  await Promise.all(Array.from({ length: Math.min(inFlight, total) }, worker));
  const elapsedS = Number(hrtime.bigint() - started) / 1e9;
  const used = cpuUsage(cpu);
  return summariseLoad(samples, elapsedS, used.user + used.system);
}

/** Percentiles of per-call latencies (µs, any order), the rate over `elapsedS` wall-clock seconds and CPU µs per call. */
export function summariseLoad(samplesUs: Float64Array, elapsedS: number, cpuUs: number): LoadResult {
  const sorted = samplesUs.slice().sort();
  return {
    operations: samplesUs.length,
    opsPerSecond: elapsedS > 0 ? samplesUs.length / elapsedS : Number.NaN,
    p50Us: percentile(sorted, 0.5),
    p99Us: percentile(sorted, 0.99),
    cpuUsPerOp: samplesUs.length > 0 ? cpuUs / samplesUs.length : Number.NaN,
  };
}
