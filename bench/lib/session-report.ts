// The sessions benchmark's report: a markdown table against the Redis round-trip floor, and the targets as PASS/FAIL.
import type { LoadResult } from './session-load.ts';
import { formatCount, formatMicros, formatRatio } from './table.ts';

export interface SessionRow {
  label: string;
  /** How the operations were driven, e.g. `1 in flight` or `16 in flight over 8 sessions`. */
  load: string;
  result: LoadResult;
  /** The floor measured with the same number in flight; undefined for the floor rows themselves. */
  floor: LoadResult | undefined;
  /** Redis's own time per operation (INFO commandstats); undefined where Redis is not involved. */
  redisUsPerOp: number | undefined;
}

/** Add-fact p99 limit over loopback Redis (the target). */
export const P99_LIMIT_US = 2_000;
/** Add-fact throughput may be at most this many times below the floor's. */
export const THROUGHPUT_FACTOR = 3;

/** How many times slower than the floor: floor ops/s over the row's ops/s (1× for the floor itself). */
export function timesFloor(row: SessionRow): number {
  return row.floor === undefined ? 1 : row.floor.opsPerSecond / row.result.opsPerSecond;
}

export function renderSessionTable(rows: readonly SessionRow[]): string {
  const lines = [
    '| operation | load | ops/s | p50 µs | p99 µs | × floor time | client CPU µs/op | Redis µs/op |',
    '|---|---|---:|---:|---:|---:|---:|---:|',
  ];
  for (const row of rows) {
    const cells = [
      row.label,
      row.load,
      formatCount(row.result.opsPerSecond),
      formatMicros(row.result.p50Us),
      formatMicros(row.result.p99Us),
      formatRatio(timesFloor(row)),
      formatMicros(row.result.cpuUsPerOp),
      row.redisUsPerOp === undefined ? '–' : formatMicros(row.redisUsPerOp),
    ];
    lines.push(`| ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}

/** One round: the floor and the adds measured back to back, so a slow stretch of the machine slows all three. */
export interface SessionRound {
  /** The floor with as many in flight as the adds. */
  floor: LoadResult;
  /** Adds to one session holding the preloaded facts: the workload. */
  oneSession: LoadResult;
  /** The same adds spread over several sessions. */
  spread: LoadResult;
}

export interface TargetInputs {
  /** Add-fact over Redis, one in flight. */
  sequential: LoadResult;
  rounds: readonly SessionRound[];
  /** How many sessions the spread adds went to. */
  sessions: number;
}

/** The median over the rounds of floor ops/s over the adds' ops/s in the same round. */
export function medianTimesFloor(rounds: readonly SessionRound[], adds: (round: SessionRound) => LoadResult): number {
  const ratios = rounds.map((round) => round.floor.opsPerSecond / adds(round).opsPerSecond).sort((a, b) => a - b);
  const middle = Math.floor(ratios.length / 2);
  return ratios.length % 2 === 1 ? (ratios[middle] as number) : ((ratios[middle - 1] as number) + (ratios[middle] as number)) / 2;
}

export function sessionTargetLines(inputs: TargetInputs): string[] {
  const p99 = inputs.sequential.p99Us;
  const throughput = (what: string, adds: (round: SessionRound) => LoadResult): string => {
    const slower = medianTimesFloor(inputs.rounds, adds);
    const perRound = inputs.rounds.map((round) => formatRatio(round.floor.opsPerSecond / adds(round).opsPerSecond)).join(', ');
    return (
      `${slower <= THROUGHPUT_FACTOR ? 'PASS' : 'FAIL'} add-fact throughput over Redis, ${what}: ${formatRatio(slower)} below the floor ` +
      `(median of ${inputs.rounds.length} rounds: ${perRound}; target within ${THROUGHPUT_FACTOR}×)`
    );
  };
  return [
    `${p99 < P99_LIMIT_US ? 'PASS' : 'FAIL'} add-fact p99 over Redis, one in flight: ${formatMicros(p99)} µs (target < ${formatCount(P99_LIMIT_US)} µs)`,
    throughput("one session (the issue's workload)", (round) => round.oneSession),
    throughput(`spread over ${inputs.sessions} sessions (beyond the issue)`, (round) => round.spread),
  ];
}
