// The performance targets, reported as PASS/MISS lines (never assertions: the machine is shared and noisy).
import type { ProfileName } from './profile.ts';
import { formatCount } from './table.ts';

export interface CellSummary {
  profile: ProfileName;
  size: number;
  engineEvalsPerSecond: number;
  engineEvalsPerCpuSecond: number;
  engineCompileMs: number;
  engineCompileCpuMs: number;
  jsonRulesEngineEvalsPerSecond: number;
  jsonParseEvalsPerSecond: number;
}

interface Target {
  profile: ProfileName;
  size: number;
  /** What is measured, its target wording, and whether it is met. */
  check: (cell: CellSummary) => { measured: string; target: string; met: boolean; shortBy: string };
}

const evalsAtLeast =
  (floor: number): Target['check'] =>
  (cell) => ({
    measured: `engine ${formatCount(cell.engineEvalsPerSecond)} evals/s (${formatCount(cell.engineEvalsPerCpuSecond)} per CPU-second)`,
    target: `≥ ${formatCount(floor)} evals/s`,
    met: cell.engineEvalsPerSecond >= floor,
    shortBy: `${percent(cell.engineEvalsPerSecond / floor)} of target`,
  });

const compileUnder =
  (limitMs: number): Target['check'] =>
  (cell) => ({
    measured: `engine compile ${cell.engineCompileMs.toFixed(0)} ms (${cell.engineCompileCpuMs.toFixed(0)} ms CPU)`,
    target: `< ${formatCount(limitMs)} ms`,
    met: cell.engineCompileMs < limitMs,
    shortBy: `${(cell.engineCompileMs / limitMs).toFixed(1)}× the limit`,
  });

const TARGETS: readonly Target[] = [
  { profile: 'selective', size: 1_000, check: evalsAtLeast(500_000) },
  {
    profile: 'selective',
    size: 1_000,
    check: (cell) => {
      const speedup = cell.engineEvalsPerSecond / cell.jsonRulesEngineEvalsPerSecond;
      return {
        measured: `engine ${formatCount(speedup)}× json-rules-engine`,
        target: '≥ 1,000×',
        met: speedup >= 1_000,
        shortBy: `${percent(speedup / 1_000)} of target`,
      };
    },
  },
  {
    profile: 'selective',
    size: 1_000,
    check: (cell) => {
      // Time per evaluation relative to parsing the same fact: evals/s of the floor over evals/s of the engine.
      const relative = cell.jsonParseEvalsPerSecond / cell.engineEvalsPerSecond;
      return {
        measured: `engine takes ${relative.toFixed(2)}× the JSON.parse time of the fact`,
        target: 'within 2×',
        met: relative <= 2,
        shortBy: `${(relative / 2).toFixed(2)}× over the 2× bound`,
      };
    },
  },
  { profile: 'selective', size: 100_000, check: evalsAtLeast(300_000) },
  { profile: 'adversarial', size: 1_000, check: evalsAtLeast(100_000) },
  { profile: 'selective', size: 10_000, check: compileUnder(500) },
  { profile: 'adversarial', size: 10_000, check: compileUnder(500) },
  { profile: 'selective', size: 100_000, check: compileUnder(5_000) },
  { profile: 'adversarial', size: 100_000, check: compileUnder(5_000) },
];

export function targetLines(cells: readonly CellSummary[]): string[] {
  return TARGETS.map((target) => {
    const where = `${target.profile} ${formatCount(target.size)} rules`;
    const cell = cells.find((candidate) => candidate.profile === target.profile && candidate.size === target.size);
    if (cell === undefined) return `SKIP ${where}: not run (see --sizes/--profiles)`;
    const { measured, target: wanted, met, shortBy } = target.check(cell);
    return met ? `PASS ${where}: ${measured} (target ${wanted})` : `MISS ${where}: ${measured} (target ${wanted}; ${shortBy})`;
  });
}

function percent(fraction: number): string {
  return `${(fraction * 100).toFixed(0)}%`;
}
