// Range tests on one field, sorted so that the tests a fact value satisfies form a prefix found by binary search.

/**
 * Distinct tests of one field, type and side, sorted so satisfied tests come first for any fact value:
 * lower side (value above bound) by bound ascending, upper side (value below bound) by bound descending,
 * non-strict before strict on equal bounds. Links of test i are links[ends[i-1] .. ends[i]).
 */
export interface RangeSide<T extends number | string> {
  readonly bounds: readonly T[];
  readonly strict: Uint8Array;
  readonly ends: Int32Array;
  /** Entry ids (network-local gates) linked to each test, test after test. */
  readonly links: Int32Array;
}

export interface RangeField {
  readonly slot: number;
  readonly numberLower: RangeSide<number> | null;
  readonly numberUpper: RangeSide<number> | null;
  readonly stringLower: RangeSide<string> | null;
  readonly stringUpper: RangeSide<string> | null;
}

interface PendingTest<T> {
  bound: T;
  strict: boolean;
  entries: number[];
}

/** Collects the tests of one side; identical tests (same bound and strictness) are shared. */
export class RangeSideBuilder<T extends number | string> {
  readonly #tests = new Map<string, PendingTest<T>>();
  readonly #side: 'lower' | 'upper';

  constructor(side: 'lower' | 'upper') {
    this.#side = side;
  }

  add(bound: T, strict: boolean, entry: number): void {
    const key = `${strict ? 1 : 0}${bound}`;
    let test = this.#tests.get(key);
    if (test === undefined) {
      test = { bound, strict, entries: [] };
      this.#tests.set(key, test);
    }
    test.entries.push(entry);
  }

  /** Number of distinct tests and of links, for the sharing metric. */
  get counts(): { tests: number; links: number } {
    let links = 0;
    for (const test of this.#tests.values()) links += test.entries.length;
    return { tests: this.#tests.size, links };
  }

  build(): RangeSide<T> | null {
    if (this.#tests.size === 0) return null;
    const ascending = this.#side === 'lower';
    const tests = [...this.#tests.values()].sort((a, b) => {
      if (a.bound !== b.bound) return a.bound < b.bound === ascending ? -1 : 1;
      return Number(a.strict) - Number(b.strict);
    });
    const ends = new Int32Array(tests.length);
    const links = new Int32Array(tests.reduce((sum, test) => sum + test.entries.length, 0));
    let end = 0;
    tests.forEach((test, index) => {
      for (const entry of test.entries) links[end++] = entry;
      ends[index] = end;
    });
    return { bounds: tests.map((test) => test.bound), strict: Uint8Array.from(tests, (test) => (test.strict ? 1 : 0)), ends, links };
  }
}

/** How many links of a lower side a value satisfies (bound < value, or bound == value and not strict). */
export function lowerSatisfied<T extends number | string>(side: RangeSide<T>, value: T): number {
  const { bounds, strict } = side;
  let low = 0;
  let high = bounds.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    const bound = bounds[mid]!;
    if (bound < value || (bound === value && strict[mid] === 0)) low = mid + 1;
    else high = mid;
  }
  return low === 0 ? 0 : side.ends[low - 1]!;
}

/** How many links of an upper side a value satisfies (bound > value, or bound == value and not strict). */
export function upperSatisfied<T extends number | string>(side: RangeSide<T>, value: T): number {
  const { bounds, strict } = side;
  let low = 0;
  let high = bounds.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    const bound = bounds[mid]!;
    if (bound > value || (bound === value && strict[mid] === 0)) low = mid + 1;
    else high = mid;
  }
  return low === 0 ? 0 : side.ends[low - 1]!;
}
