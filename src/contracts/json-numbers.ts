// Numbers JSON text can spell but a double cannot hold (1e400 parses as Infinity), refused alike over HTTP and Kafka:
// evaluated as Infinity but recorded as null, such a fact would fire rules its own stored record contradicts.
import { jsonPath } from './poisoning-keys.ts';

// Only an exponent of three digits or more can spell a number past ±1.8e308, or a mantissa of at least 210 digits
// before its point (an exponent of two digits adds at most 99). Two tests: an alternation of both scans several times slower.
const LONG_EXPONENT = /[eE]\+?\d\d\d/;
const LONG_DIGITS = /\d{210}/;

/** Whether JSON text can hold a number beyond the range of a double at all. */
export function mayHoldHugeNumber(text: string): boolean {
  return LONG_EXPONENT.test(text) || (text.length >= 210 && LONG_DIGITS.test(text));
}

/** The path (`facts.a[0]`) of the first number that is not finite, walked without recursion; undefined when there is none. */
export function nonFiniteNumberPath(root: unknown): string | undefined {
  const stack: { value: unknown; path: string }[] = [{ value: root, path: '' }];
  while (stack.length > 0) {
    const { value, path } = stack.pop()!;
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) return path;
      continue;
    }
    if (typeof value !== 'object' || value === null) continue;
    for (const [key, child] of Object.entries(value)) {
      stack.push({ value: child, path: jsonPath(path, key, Array.isArray(value)) });
    }
  }
  return undefined;
}

/**
 * What to say about the first number a double cannot hold in `parsed`, read from JSON `text` (e.g. `holds a number
 * beyond the range of a double (±1.7976931348623157e308) at facts.amount`); undefined when there is none.
 */
export function hugeNumberProblem(text: string, parsed: unknown): string | undefined {
  return mayHoldHugeNumber(text) ? nonFiniteNumberProblem(parsed) : undefined;
}

/** The same, for a value parsed from JSON text no longer at hand (a registry client's): walks the whole value. */
export function nonFiniteNumberProblem(parsed: unknown): string | undefined {
  const path = nonFiniteNumberPath(parsed);
  if (path === undefined) return undefined;
  return `holds a number beyond the range of a double (±1.7976931348623157e308)${path === '' ? '' : ` at ${path}`}`;
}
