// Markdown tables of results: one row per contender, ratios against json-rules-engine and the JSON.parse floor.
import type { Timing } from './timing.ts';

export interface ResultRow {
  contender: string;
  timing: Timing;
  /** Undefined where there is nothing to compile (the JSON.parse floor). */
  compileMs: number | undefined;
  heapMb: number | undefined;
  /** Which facts were timed and under what budget. */
  timedOn: string;
}

export interface Baselines {
  jsonRulesEngineEvalsPerSecond: number;
  jsonParseEvalsPerSecond: number;
}

const HEADER = [
  'contender',
  'evals/s',
  'evals/CPU-s',
  'p50 µs',
  'p99 µs',
  'compile ms',
  'heap MB',
  '× json-rules-engine',
  '× JSON.parse',
  'timed on',
];

export function renderTable(rows: readonly ResultRow[], baselines: Baselines): string {
  const lines = [row(HEADER), row(HEADER.map((_, index) => (index === 0 || index === HEADER.length - 1 ? '---' : '---:')))];
  for (const result of rows) {
    lines.push(
      row([
        result.contender,
        formatCount(result.timing.evalsPerSecond),
        formatCount(result.timing.evalsPerCpuSecond),
        formatMicros(result.timing.p50Us),
        formatMicros(result.timing.p99Us),
        result.compileMs === undefined ? '–' : formatFixed(result.compileMs, 1),
        result.heapMb === undefined ? '–' : formatFixed(result.heapMb, 1),
        formatRatio(result.timing.evalsPerSecond / baselines.jsonRulesEngineEvalsPerSecond),
        formatRatio(result.timing.evalsPerSecond / baselines.jsonParseEvalsPerSecond),
        result.timedOn,
      ]),
    );
  }
  return lines.join('\n');
}

function row(cells: readonly string[]): string {
  return `| ${cells.join(' | ')} |`;
}

/** Whole numbers with separators; below 10 two significant digits, so 0.13 evals/s does not print as 0. */
export function formatCount(value: number): string {
  if (!Number.isFinite(value)) return 'n/a';
  if (value < 10 && value !== Math.round(value)) return value.toPrecision(2);
  return Math.round(value).toLocaleString('en-US');
}

/** Three significant digits, at least whole numbers: 0.412, 3.08, 41.2, 1,234. */
export function formatMicros(value: number): string {
  if (!Number.isFinite(value)) return 'n/a';
  if (value >= 1_000) return Math.round(value).toLocaleString('en-US');
  return value.toPrecision(3);
}

export function formatRatio(value: number): string {
  if (!Number.isFinite(value)) return 'n/a';
  if (value >= 100) return `${Math.round(value).toLocaleString('en-US')}×`;
  return `${value.toPrecision(2)}×`;
}

function formatFixed(value: number, digits: number): string {
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}
