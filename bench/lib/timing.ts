// Latency and throughput of one contender: warm-up, then every evaluation timed with hrtime into a Float64Array.
import { cpuUsage, hrtime } from 'node:process';

export interface TimingBudget {
  warmupMs: number;
  /** Time spent timing single evaluations for p50/p99. */
  latencyMs: number;
  /** Time spent on an untimed loop for evals/s, split in rounds; 0 derives evals/s from the latency pass. */
  throughputMs: number;
  /** evals/s is the best round: on a shared machine noise only ever slows a round down. */
  throughputRounds: number;
  maxSamples: number;
}

export interface Timing {
  evaluations: number;
  /** Evaluations per wall-clock second. */
  evalsPerSecond: number;
  /** Evaluations per second of CPU time this process used (user + system): other load on the machine does not count. */
  evalsPerCpuSecond: number;
  p50Us: number;
  p99Us: number;
}

interface Rate {
  wall: number;
  cpu: number;
}

/** Keeps results reachable so no evaluation can be optimised away. */
export let sink: unknown;

const CLOCK_EVERY = 16;

export function timeSync(run: (index: number) => unknown, factCount: number, budget: TimingBudget): Timing {
  loopFor(run, factCount, budget.warmupMs);
  const samples = new Float64Array(budget.maxSamples);
  const pass = startPass();
  const deadline = pass.wall + msToNs(budget.latencyMs);
  let count = 0;
  while (count < samples.length) {
    const start = hrtime.bigint();
    sink = run(count % factCount);
    const end = hrtime.bigint();
    samples[count++] = Number(end - start) / 1_000;
    if (end >= deadline) break;
  }
  let rate = endPass(pass, count);
  if (budget.throughputMs > 0) {
    const rounds = Math.max(1, budget.throughputRounds);
    rate = { wall: 0, cpu: 0 };
    for (let round = 0; round < rounds; round++) {
      const roundRate = loopFor(run, factCount, budget.throughputMs / rounds);
      rate = { wall: Math.max(rate.wall, roundRate.wall), cpu: Math.max(rate.cpu, roundRate.cpu) };
    }
  }
  return summarise(samples.subarray(0, count), rate);
}

export async function timeAsync(run: (index: number) => Promise<unknown>, factCount: number, budget: TimingBudget): Promise<Timing> {
  const warmupEnd = hrtime.bigint() + msToNs(budget.warmupMs);
  for (let index = 0; hrtime.bigint() < warmupEnd; index++) sink = await run(index % factCount);
  const samples = new Float64Array(budget.maxSamples);
  const pass = startPass();
  const deadline = pass.wall + msToNs(budget.latencyMs);
  let count = 0;
  while (count < samples.length) {
    const start = hrtime.bigint();
    sink = await run(count % factCount);
    const end = hrtime.bigint();
    samples[count++] = Number(end - start) / 1_000;
    if (end >= deadline) break;
  }
  return summarise(samples.subarray(0, count), endPass(pass, count));
}

/** Median cost of one hrtime.bigint() pair in µs: included in every per-evaluation sample. */
export function timerOverheadUs(): number {
  const samples = new Float64Array(100_000);
  for (let index = 0; index < samples.length; index++) {
    const start = hrtime.bigint();
    samples[index] = Number(hrtime.bigint() - start) / 1_000;
  }
  return percentile(samples.sort(), 0.5);
}

/** Nearest-rank percentile of ascending samples; NaN when there are none. */
export function percentile(sorted: Float64Array, quantile: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(quantile * sorted.length)));
  return sorted[rank - 1]!;
}

/** Runs untimed evaluations for about `ms` and returns their rate. */
function loopFor(run: (index: number) => unknown, factCount: number, ms: number): Rate {
  const pass = startPass();
  const deadline = pass.wall + msToNs(ms);
  let count = 0;
  let now = pass.wall;
  while (now < deadline) {
    for (let step = 0; step < CLOCK_EVERY; step++) sink = run(count++ % factCount);
    now = hrtime.bigint();
  }
  return endPass(pass, count);
}

interface PassStart {
  wall: bigint;
  cpu: NodeJS.CpuUsage;
}

function startPass(): PassStart {
  return { cpu: cpuUsage(), wall: hrtime.bigint() };
}

function endPass(pass: PassStart, count: number): Rate {
  const wallNs = Number(hrtime.bigint() - pass.wall);
  const cpu = cpuUsage(pass.cpu);
  return { wall: perSecond(count, wallNs / 1e9), cpu: perSecond(count, (cpu.user + cpu.system) / 1e6) };
}

function summarise(samples: Float64Array, rate: Rate): Timing {
  const sorted = samples.slice().sort();
  return {
    evaluations: samples.length,
    evalsPerSecond: rate.wall,
    evalsPerCpuSecond: rate.cpu,
    p50Us: percentile(sorted, 0.5),
    p99Us: percentile(sorted, 0.99),
  };
}

function perSecond(count: number, seconds: number): number {
  return seconds > 0 ? count / seconds : Number.NaN;
}

function msToNs(ms: number): bigint {
  return BigInt(Math.round(ms * 1e6));
}
