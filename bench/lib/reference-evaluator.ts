// A slow, obvious interpreter of the DSL: an independent oracle the benchmark checks every contender against.
import {
  CANONICAL_OPERATOR,
  type CanonicalOperator,
  type ConditionNode,
  type ConditionValue,
  type Scalar,
} from '../../src/contracts/condition-dsl.ts';
import { resolveField } from './field-path.ts';

/** Engine contract: only a non-null, non-array object is a fact (or a quantified element) a condition can hold against. */
export function isFactObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whether a rule's condition holds for a fact; anything but an object matches nothing. */
export function referenceMatches(node: ConditionNode, fact: unknown): boolean {
  return isFactObject(fact) && holds(node, fact);
}

function holds(node: ConditionNode, fact: Record<string, unknown>): boolean {
  switch (node.type) {
    case 'condition': {
      const actual = resolveField(fact, node.field);
      // DSL contract: a missing field makes every comparison false, != and not_in included.
      return actual !== undefined && compare(CANONICAL_OPERATOR[node.op], actual, node.value);
    }
    case 'and':
      return node.children.every((child) => holds(child, fact));
    case 'or':
      return node.children.some((child) => holds(child, fact));
    case 'not':
      return !holds(node.child, fact);
    case 'exists': {
      const actual = resolveField(fact, node.field);
      return actual !== undefined && actual !== null;
    }
    case 'any':
    case 'all': {
      const items = resolveField(fact, node.field);
      // Quantifier contract: a non-array field is false, an element that is not an object satisfies nothing, all([]) holds.
      if (!Array.isArray(items)) return false;
      return node.type === 'any'
        ? items.some((item) => referenceMatches(node.condition, item))
        : items.every((item) => referenceMatches(node.condition, item));
    }
    case 'accumulate': {
      // Outside a session the working memory is this one fact; an aggregate of nothing is 0 (count, sum) or null.
      const counted = node.where === undefined || holds(node.where, fact);
      const actual = node.field === undefined ? undefined : resolveField(fact, node.field);
      let aggregate: number | null;
      if (node.function === 'count') aggregate = counted && (node.field === undefined || (actual !== undefined && actual !== null)) ? 1 : 0;
      else if (counted && typeof actual === 'number' && Number.isFinite(actual)) aggregate = actual;
      else aggregate = node.function === 'sum' ? 0 : null;
      return aggregate !== null && compare(CANONICAL_OPERATOR[node.op], aggregate, node.value);
    }
  }
}

/** The engine's default bound: longer strings never match a regex. */
export const REGEX_MAX_INPUT_LENGTH = 10_000;

/** One comparison of a present fact value; no string/number coercion anywhere. */
export function compare(op: CanonicalOperator, actual: unknown, expected: ConditionValue): boolean {
  switch (op) {
    case '==':
      return actual === expected;
    case '!=':
      return actual !== expected;
    case '>':
      return orderable(actual, expected) && (actual as number) > (expected as number);
    case '>=':
      return orderable(actual, expected) && (actual as number) >= (expected as number);
    case '<':
      return orderable(actual, expected) && (actual as number) < (expected as number);
    case '<=':
      return orderable(actual, expected) && (actual as number) <= (expected as number);
    case 'in':
      return Array.isArray(expected) && expected.includes(actual as never);
    case 'not_in':
      return isScalar(actual) && Array.isArray(expected) && !expected.includes(actual);
    case 'contains':
      return contains(actual, expected);
    case 'not_contains':
      // Only where contains could hold: an array, or a string searched for a string.
      if (Array.isArray(actual)) return !actual.includes(expected);
      return typeof actual === 'string' && typeof expected === 'string' && !actual.includes(expected);
    case 'starts_with':
      return typeof actual === 'string' && typeof expected === 'string' && actual.startsWith(expected);
    case 'ends_with':
      return typeof actual === 'string' && typeof expected === 'string' && actual.endsWith(expected);
    case 'regex':
      return (
        typeof actual === 'string' &&
        actual.length <= REGEX_MAX_INPUT_LENGTH &&
        typeof expected === 'string' &&
        new RegExp(expected).test(actual)
      );
    case 'between': {
      if (!Array.isArray(expected)) return false;
      const [low, high] = expected;
      return (
        orderable(actual, low) && orderable(actual, high) && (actual as number) >= (low as number) && (actual as number) <= (high as number)
      );
    }
  }
}

/** JSON scalars are the only fact values in/not_in compare. */
function isScalar(value: unknown): value is Scalar {
  return value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

/** Ordering is defined only number with number and string with string. */
function orderable(actual: unknown, expected: unknown): boolean {
  return (typeof actual === 'number' && typeof expected === 'number') || (typeof actual === 'string' && typeof expected === 'string');
}

/** Membership for arrays, substring for strings. */
function contains(actual: unknown, expected: ConditionValue): boolean {
  if (Array.isArray(actual)) return actual.includes(expected);
  return typeof actual === 'string' && typeof expected === 'string' && actual.includes(expected);
}
