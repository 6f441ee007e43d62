// Operator semantics of the DSL contract (docs/dsl.md), in one place: compiled closures and explain both use these tests.
import type { CanonicalOperator, ConditionValue, Scalar } from '../contracts/condition-dsl.ts';

/** Whether a fact value (undefined = missing) satisfies one comparison. Never throws for JSON values. */
export type ValueTest = (actual: unknown) => boolean;

export interface OperatorOptions {
  /** Strings longer than this never match a regex (bounds the work per fact). */
  regexMaxInputLength: number;
  /** Compiles a validated pattern once into its search (see compileRegex); the engine passes a cache. */
  regex: (pattern: string) => (text: string) => boolean;
}

/** A JSON scalar: the only fact values `in`/`not_in` compare. Objects, arrays and non-JSON values are not scalars. */
export function isScalar(value: unknown): value is Scalar {
  return value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

/** Membership with strict equality (so NaN is never a member), fast for short lists. */
function membership(values: readonly Scalar[]): ValueTest {
  const distinct = [...new Set(values)];
  if (distinct.length <= 8) return (actual) => distinct.indexOf(actual as Scalar) !== -1;
  // The list holds no NaN (JSON has none), so SameValueZero in Set.has agrees with ===.
  const set = new Set<unknown>(distinct);
  return (actual) => set.has(actual);
}

function ordering(op: '>' | '>=' | '<' | '<=', bound: string | number): ValueTest {
  const type = typeof bound;
  switch (op) {
    case '>':
      return (actual) => typeof actual === type && (actual as typeof bound) > bound;
    case '>=':
      return (actual) => typeof actual === type && (actual as typeof bound) >= bound;
    case '<':
      return (actual) => typeof actual === type && (actual as typeof bound) < bound;
    case '<=':
      return (actual) => typeof actual === type && (actual as typeof bound) <= bound;
  }
}

/** The test for one validated comparison; `value` must already suit `op` (validateCondition guarantees it). */
export function valueTest(op: CanonicalOperator, value: ConditionValue, options: OperatorOptions): ValueTest {
  switch (op) {
    case '==': {
      const expected = value as Scalar;
      return (actual) => actual === expected;
    }
    case '!=': {
      const expected = value as Scalar;
      return (actual) => actual !== undefined && actual !== expected;
    }
    case '>':
    case '>=':
    case '<':
    case '<=':
      return ordering(op, value as string | number);
    case 'between': {
      const [low, high] = value as [string, string] | [number, number];
      const type = typeof low;
      return (actual) => typeof actual === type && (actual as typeof low) >= low && (actual as typeof high) <= high;
    }
    case 'in':
      return membership(value as Scalar[]);
    case 'not_in': {
      const isMember = membership(value as Scalar[]);
      return (actual) => isScalar(actual) && !isMember(actual);
    }
    case 'contains': {
      const expected = value as Scalar;
      if (typeof expected === 'string') {
        return (actual) =>
          Array.isArray(actual) ? actual.indexOf(expected) !== -1 : typeof actual === 'string' && actual.includes(expected);
      }
      return (actual) => Array.isArray(actual) && actual.indexOf(expected) !== -1;
    }
    case 'not_contains': {
      const expected = value as Scalar;
      if (typeof expected === 'string') {
        return (actual) =>
          Array.isArray(actual) ? actual.indexOf(expected) === -1 : typeof actual === 'string' && !actual.includes(expected);
      }
      return (actual) => Array.isArray(actual) && actual.indexOf(expected) === -1;
    }
    case 'starts_with': {
      const prefix = value as string;
      return (actual) => typeof actual === 'string' && actual.startsWith(prefix);
    }
    case 'ends_with': {
      const suffix = value as string;
      return (actual) => typeof actual === 'string' && actual.endsWith(suffix);
    }
    case 'regex': {
      const search = options.regex(value as string);
      const maxLength = options.regexMaxInputLength;
      return (actual) => typeof actual === 'string' && actual.length <= maxLength && search(actual);
    }
  }
}
