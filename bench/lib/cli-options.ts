// Command-line flags of the engine benchmark: --quick, --sizes=1000,10000, --profiles=selective,adversarial,grouped.
import { parseArgs } from 'node:util';
import type { ProfileName } from './profile.ts';

export interface BenchOptions {
  quick: boolean;
  sizes: number[];
  profiles: ProfileName[];
}

export const DEFAULT_SIZES = [1_000, 10_000, 100_000];
export const MAX_SIZE = 1_000_000;
const PROFILE_NAMES: readonly ProfileName[] = ['selective', 'adversarial', 'grouped'];

export class UsageError extends Error {
  override name = 'UsageError';
}

export function parseBenchOptions(argv: readonly string[]): BenchOptions {
  let values: { quick?: boolean; sizes?: string; profiles?: string };
  try {
    ({ values } = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: { quick: { type: 'boolean' }, sizes: { type: 'string' }, profiles: { type: 'string' } },
    }));
  } catch (error) {
    throw new UsageError(
      `${(error as Error).message}. Usage: bench [--quick] [--sizes=1000,10000] [--profiles=selective,adversarial,grouped]`,
    );
  }
  return {
    quick: values.quick ?? false,
    sizes: values.sizes === undefined ? DEFAULT_SIZES : parseSizes(values.sizes),
    profiles: values.profiles === undefined ? [...PROFILE_NAMES] : parseProfiles(values.profiles),
  };
}

function parseSizes(text: string): number[] {
  const sizes = splitList(text, '--sizes').map((item) => {
    if (!/^[0-9]+$/.test(item)) throw new UsageError(`--sizes: "${item}" is not a whole number of rules`);
    const size = Number(item);
    if (size < 1 || size > MAX_SIZE) throw new UsageError(`--sizes: ${size} is outside 1..${MAX_SIZE}`);
    return size;
  });
  return [...new Set(sizes)];
}

function parseProfiles(text: string): ProfileName[] {
  const profiles = splitList(text, '--profiles').map((item) => {
    const profile = PROFILE_NAMES.find((name) => name === item);
    if (profile === undefined) throw new UsageError(`--profiles: unknown profile "${item}" (known: ${PROFILE_NAMES.join(', ')})`);
    return profile;
  });
  return [...new Set(profiles)];
}

function splitList(text: string, flag: string): string[] {
  const items = text.split(',').map((item) => item.trim());
  if (items.some((item) => item === '')) throw new UsageError(`${flag}: expected a comma-separated list, got "${text}"`);
  return items;
}
