import { describe, expect, it } from 'vitest';
import { DEFAULT_SIZES, parseBenchOptions, UsageError } from '../../../bench/lib/cli-options.ts';

function usageError(argv: string[]): string {
  try {
    parseBenchOptions(argv);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as UsageError).message;
  }
  throw new Error('expected parseBenchOptions to throw');
}

describe('parseBenchOptions', () => {
  it('runs every size and profile at full length by default', () => {
    expect(parseBenchOptions([])).toEqual({ quick: false, sizes: DEFAULT_SIZES, profiles: ['selective', 'adversarial', 'grouped'] });
  });

  it('reads --quick, --sizes and --profiles', () => {
    expect(parseBenchOptions(['--quick', '--sizes=1000,10000', '--profiles=adversarial'])).toEqual({
      quick: true,
      sizes: [1_000, 10_000],
      profiles: ['adversarial'],
    });
  });

  it('drops repeated sizes', () => {
    expect(parseBenchOptions(['--sizes=1000, 1000']).sizes).toEqual([1_000]);
  });

  it('rejects an unknown flag with the usage line', () => {
    expect(usageError(['--fast'])).toMatch(/Unknown option '--fast'.*Usage: bench \[--quick\]/);
  });

  it('rejects a positional argument', () => {
    expect(usageError(['1000'])).toContain('Usage: bench');
  });

  it('rejects a size that is not a whole number', () => {
    expect(usageError(['--sizes=1e3'])).toBe('--sizes: "1e3" is not a whole number of rules');
    expect(usageError(['--sizes=-5'])).toBe('--sizes: "-5" is not a whole number of rules');
  });

  it('rejects sizes out of range', () => {
    expect(usageError(['--sizes=0'])).toBe('--sizes: 0 is outside 1..1000000');
    expect(usageError(['--sizes=2000000'])).toBe('--sizes: 2000000 is outside 1..1000000');
  });

  it('rejects an empty item in a list', () => {
    expect(usageError(['--sizes=1000,'])).toBe('--sizes: expected a comma-separated list, got "1000,"');
    expect(usageError(['--sizes='])).toBe('--sizes: expected a comma-separated list, got ""');
  });

  it('rejects an unknown profile, naming the known ones', () => {
    expect(usageError(['--profiles=random'])).toBe('--profiles: unknown profile "random" (known: selective, adversarial, grouped)');
  });

  it('rejects --sizes without a value', () => {
    expect(usageError(['--sizes'])).toContain("Option '--sizes <value>' argument missing");
  });
});
