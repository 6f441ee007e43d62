// Command-line flags of the sessions benchmark: --facts, --adds, --in-flight, --sessions, --replace-share, --rounds, --seed.
import { parseArgs } from 'node:util';
import { UsageError } from './cli-options.ts';

export interface SessionBenchOptions {
  /** Facts each session holds before any add is timed. */
  facts: number;
  /** Timed adds per row. */
  adds: number;
  /** Operations outstanding in the concurrent rows. */
  inFlight: number;
  /** Sessions the concurrent add-fact row spreads its adds over. */
  sessions: number;
  /** Share of timed adds that replace an existing fact id. */
  replaceShare: number;
  /** Rounds of floor, one session and several sessions, measured back to back so each ratio compares like with like. */
  rounds: number;
  seed: number;
}

export const SESSION_DEFAULTS: SessionBenchOptions = {
  facts: 10_000,
  adds: 5_000,
  inFlight: 16,
  sessions: 4,
  replaceShare: 0.25,
  rounds: 3,
  seed: 1,
};

const USAGE =
  'Usage: bench:sessions [--facts 10000] [--adds 5000] [--in-flight 16] [--sessions 4] [--replace-share 0.25] [--rounds 3] [--seed 1]';

export function parseSessionBenchOptions(argv: readonly string[]): SessionBenchOptions {
  let values: Record<string, string | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        facts: { type: 'string' },
        adds: { type: 'string' },
        'in-flight': { type: 'string' },
        sessions: { type: 'string' },
        'replace-share': { type: 'string' },
        rounds: { type: 'string' },
        seed: { type: 'string' },
      },
    }));
  } catch (error) {
    throw new UsageError(`${(error as Error).message}. ${USAGE}`);
  }
  return {
    facts: whole(values.facts, '--facts', SESSION_DEFAULTS.facts, 0, 1_000_000),
    adds: whole(values.adds, '--adds', SESSION_DEFAULTS.adds, 1, 10_000_000),
    inFlight: whole(values['in-flight'], '--in-flight', SESSION_DEFAULTS.inFlight, 1, 1_024),
    sessions: whole(values.sessions, '--sessions', SESSION_DEFAULTS.sessions, 1, 1_024),
    replaceShare: share(values['replace-share'], SESSION_DEFAULTS.replaceShare),
    rounds: whole(values.rounds, '--rounds', SESSION_DEFAULTS.rounds, 1, 20),
    seed: whole(values.seed, '--seed', SESSION_DEFAULTS.seed, 0, 2 ** 32 - 1),
  };
}

function whole(text: string | undefined, flag: string, fallback: number, min: number, max: number): number {
  if (text === undefined) return fallback;
  if (!/^[0-9]+$/.test(text)) throw new UsageError(`${flag}: "${text}" is not a whole number. ${USAGE}`);
  const value = Number(text);
  if (value < min || value > max) throw new UsageError(`${flag}: ${value} is outside ${min}..${max}. ${USAGE}`);
  return value;
}

function share(text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (text.trim() === '' || !(value >= 0 && value <= 1))
    throw new UsageError(`--replace-share: "${text}" is not a number from 0 to 1. ${USAGE}`);
  return value;
}
