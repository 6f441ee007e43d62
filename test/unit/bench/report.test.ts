import { describe, expect, it } from 'vitest';
import { formatCount, formatMicros, formatRatio, renderTable } from '../../../bench/lib/table.ts';
import { type CellSummary, targetLines } from '../../../bench/lib/targets.ts';
import { percentile } from '../../../bench/lib/timing.ts';

describe('percentile', () => {
  const sorted = Float64Array.from({ length: 100 }, (_, index) => index + 1);

  it('uses the nearest rank', () => {
    expect(percentile(sorted, 0.5)).toBe(50);
    expect(percentile(sorted, 0.99)).toBe(99);
    expect(percentile(sorted, 1)).toBe(100);
    expect(percentile(Float64Array.of(7), 0.99)).toBe(7);
  });

  it('is NaN without samples', () => {
    expect(percentile(new Float64Array(0), 0.5)).toBeNaN();
  });
});

describe('number formatting', () => {
  it('formats counts with separators and keeps small rates readable', () => {
    expect(formatCount(1_234_567.4)).toBe('1,234,567');
    expect(formatCount(0.134)).toBe('0.13');
    expect(formatCount(3)).toBe('3');
    expect(formatCount(Number.NaN)).toBe('n/a');
  });

  it('formats microseconds to three significant digits', () => {
    expect(formatMicros(0.41234)).toBe('0.412');
    expect(formatMicros(41.234)).toBe('41.2');
    expect(formatMicros(12_345.6)).toBe('12,346');
  });

  it('formats ratios', () => {
    expect(formatRatio(1_530.2)).toBe('1,530×');
    expect(formatRatio(0.5123)).toBe('0.51×');
    expect(formatRatio(Number.POSITIVE_INFINITY)).toBe('n/a');
  });
});

describe('renderTable', () => {
  it('prints one markdown row per contender with ratios to both baselines', () => {
    const table = renderTable(
      [
        {
          contender: 'engine',
          timing: { evaluations: 10, evalsPerSecond: 500_000, evalsPerCpuSecond: 520_000, p50Us: 1.5, p99Us: 4.25 },
          compileMs: 12.34,
          heapMb: 1.26,
          timedOn: 'all facts',
        },
        {
          contender: 'floor',
          timing: { evaluations: 10, evalsPerSecond: 1_000_000, evalsPerCpuSecond: 990_000, p50Us: 0.9, p99Us: 2 },
          compileMs: undefined,
          heapMb: undefined,
          timedOn: 'all facts',
        },
      ],
      { jsonRulesEngineEvalsPerSecond: 250, jsonParseEvalsPerSecond: 1_000_000 },
    );
    expect(table.split('\n')).toEqual([
      '| contender | evals/s | evals/CPU-s | p50 µs | p99 µs | compile ms | heap MB | × json-rules-engine | × JSON.parse | timed on |',
      '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
      '| engine | 500,000 | 520,000 | 1.50 | 4.25 | 12.3 | 1.3 | 2,000× | 0.50× | all facts |',
      '| floor | 1,000,000 | 990,000 | 0.900 | 2.00 | – | – | 4,000× | 1.0× | all facts |',
    ]);
  });
});

describe('targetLines', () => {
  const passing: CellSummary[] = [
    {
      profile: 'selective',
      size: 1_000,
      engineEvalsPerSecond: 600_000,
      engineEvalsPerCpuSecond: 600_000,
      engineCompileMs: 5,
      engineCompileCpuMs: 5,
      jsonRulesEngineEvalsPerSecond: 40,
      jsonParseEvalsPerSecond: 900_000,
    },
    {
      profile: 'selective',
      size: 10_000,
      engineEvalsPerSecond: 550_000,
      engineEvalsPerCpuSecond: 550_000,
      engineCompileMs: 100,
      engineCompileCpuMs: 100,
      jsonRulesEngineEvalsPerSecond: 4,
      jsonParseEvalsPerSecond: 900_000,
    },
    {
      profile: 'selective',
      size: 100_000,
      engineEvalsPerSecond: 400_000,
      engineEvalsPerCpuSecond: 400_000,
      engineCompileMs: 1_200,
      engineCompileCpuMs: 1_200,
      jsonRulesEngineEvalsPerSecond: 0.2,
      jsonParseEvalsPerSecond: 900_000,
    },
    {
      profile: 'adversarial',
      size: 1_000,
      engineEvalsPerSecond: 150_000,
      engineEvalsPerCpuSecond: 150_000,
      engineCompileMs: 5,
      engineCompileCpuMs: 5,
      jsonRulesEngineEvalsPerSecond: 60,
      jsonParseEvalsPerSecond: 900_000,
    },
    {
      profile: 'adversarial',
      size: 10_000,
      engineEvalsPerSecond: 20_000,
      engineEvalsPerCpuSecond: 20_000,
      engineCompileMs: 90,
      engineCompileCpuMs: 90,
      jsonRulesEngineEvalsPerSecond: 6,
      jsonParseEvalsPerSecond: 900_000,
    },
    {
      profile: 'adversarial',
      size: 100_000,
      engineEvalsPerSecond: 2_000,
      engineEvalsPerCpuSecond: 2_000,
      engineCompileMs: 900,
      engineCompileCpuMs: 900,
      jsonRulesEngineEvalsPerSecond: 0.5,
      jsonParseEvalsPerSecond: 900_000,
    },
  ];

  it('passes every target the figures meet', () => {
    const lines = targetLines(passing);
    expect(lines).toHaveLength(9);
    expect(lines.every((line) => line.startsWith('PASS '))).toBe(true);
    expect(lines[0]).toBe('PASS selective 1,000 rules: engine 600,000 evals/s (600,000 per CPU-second) (target ≥ 500,000 evals/s)');
    expect(lines[1]).toBe('PASS selective 1,000 rules: engine 15,000× json-rules-engine (target ≥ 1,000×)');
    expect(lines[2]).toBe('PASS selective 1,000 rules: engine takes 1.50× the JSON.parse time of the fact (target within 2×)');
  });

  it('says by how much a target is missed', () => {
    const slow = passing.map((cell) =>
      cell.size === 1_000 && cell.profile === 'selective'
        ? { ...cell, engineEvalsPerSecond: 300_000, engineEvalsPerCpuSecond: 310_000 }
        : cell,
    );
    const lines = targetLines(slow);
    expect(lines[0]).toBe(
      'MISS selective 1,000 rules: engine 300,000 evals/s (310,000 per CPU-second) (target ≥ 500,000 evals/s; 60% of target)',
    );
    expect(lines[2]).toBe(
      'MISS selective 1,000 rules: engine takes 3.00× the JSON.parse time of the fact (target within 2×; 1.50× over the 2× bound)',
    );
    const slowCompile = passing.map((cell) =>
      cell.size === 100_000 ? { ...cell, engineCompileMs: 7_500, engineCompileCpuMs: 7_000 } : cell,
    );
    expect(targetLines(slowCompile)[7]).toBe(
      'MISS selective 100,000 rules: engine compile 7500 ms (7000 ms CPU) (target < 5,000 ms; 1.5× the limit)',
    );
  });

  it('marks targets of sizes that were not run as skipped', () => {
    const lines = targetLines(passing.filter((cell) => cell.size !== 100_000));
    expect(lines[3]).toBe('SKIP selective 100,000 rules: not run (see --sizes/--profiles)');
  });
});
