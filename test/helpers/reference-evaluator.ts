// A naive, obviously correct evaluator of the condition DSL, written from docs/dsl.md without the engine's code.
// Property tests hold the indexed engine to it. It imports types only, so an engine bug cannot leak in here.
import type { ConditionNode, Scalar } from '../../src/contracts/condition-dsl.ts';
import type { RuleInput } from '../../src/contracts/rule.ts';

export const REFERENCE_REGEX_MAX_INPUT_LENGTH = 10_000;

/** A fact (or quantified element) a condition can hold against: a non-null object that is not an array. */
function isFact(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isJsonScalar(value: unknown): boolean {
  return value === null || ['string', 'number', 'boolean'].includes(typeof value);
}

/** Field path lookup: the literal dotted key first, then a walk through own properties and canonical array indexes. */
export function referenceLookup(root: unknown, path: string): unknown {
  if (typeof root !== 'object' || root === null) return undefined;
  if (path.includes('.') && !Array.isArray(root) && Object.hasOwn(root, path)) return (root as Record<string, unknown>)[path];
  let current: unknown = root;
  for (const segment of path.split('.')) {
    if (Array.isArray(current)) {
      if (!/^(0|[1-9][0-9]*)$/.test(segment)) return undefined;
      const index = Number(segment);
      if (index >= current.length || !Object.hasOwn(current, index)) return undefined;
      current = current[index];
    } else if (typeof current === 'object' && current !== null) {
      if (!Object.hasOwn(current, segment)) return undefined;
      current = (current as Record<string, unknown>)[segment];
    } else {
      return undefined;
    }
    if (current === undefined) return undefined;
  }
  return current;
}

function sameType(a: unknown, b: unknown): boolean {
  return (typeof a === 'number' && typeof b === 'number') || (typeof a === 'string' && typeof b === 'string');
}

/** One comparison; `actual` undefined means the field is missing, and then nothing holds. */
export function referenceCompare(
  op: string,
  actual: unknown,
  expected: Scalar | Scalar[],
  regexMaxInputLength = REFERENCE_REGEX_MAX_INPUT_LENGTH,
): boolean {
  if (actual === undefined) return false;
  const list = Array.isArray(expected) ? expected : [];
  const isMember = (value: unknown) => list.some((item) => item === value);
  switch (op) {
    case '==':
    case 'eq':
      return actual === expected;
    case '!=':
    case 'ne':
      return actual !== expected;
    case '>':
    case 'gt':
      return sameType(actual, expected) && (actual as number) > (expected as number);
    case '>=':
    case 'gte':
      return sameType(actual, expected) && (actual as number) >= (expected as number);
    case '<':
    case 'lt':
      return sameType(actual, expected) && (actual as number) < (expected as number);
    case '<=':
    case 'lte':
      return sameType(actual, expected) && (actual as number) <= (expected as number);
    case 'between': {
      const [low, high] = list;
      return (
        sameType(actual, low) && sameType(actual, high) && (actual as number) >= (low as number) && (actual as number) <= (high as number)
      );
    }
    case 'in':
      return isJsonScalar(actual) && isMember(actual);
    case 'not_in':
      return isJsonScalar(actual) && !isMember(actual);
    case 'contains':
      if (Array.isArray(actual)) return actual.some((item) => item === expected);
      return typeof actual === 'string' && typeof expected === 'string' && actual.includes(expected);
    case 'not_contains':
      if (Array.isArray(actual)) return !actual.some((item) => item === expected);
      return typeof actual === 'string' && typeof expected === 'string' && !actual.includes(expected);
    case 'starts_with':
      return typeof actual === 'string' && actual.startsWith(expected as string);
    case 'ends_with':
      return typeof actual === 'string' && actual.endsWith(expected as string);
    case 'regex':
      return typeof actual === 'string' && actual.length <= regexMaxInputLength && new RegExp(expected as string).test(actual);
    default:
      throw new Error(`reference evaluator: unknown operator ${op}`);
  }
}

function holds(node: ConditionNode, root: Record<string, unknown>): boolean {
  switch (node.type) {
    case 'condition':
      return referenceCompare(node.op, referenceLookup(root, node.field), node.value);
    case 'and':
      return node.children.every((child) => holds(child, root));
    case 'or':
      return node.children.some((child) => holds(child, root));
    case 'not':
      return !holds(node.child, root);
    case 'exists': {
      const value = referenceLookup(root, node.field);
      return value !== undefined && value !== null;
    }
    case 'any':
    case 'all': {
      const list = referenceLookup(root, node.field);
      if (!Array.isArray(list)) return false;
      const results: boolean[] = [];
      for (let i = 0; i < list.length; i++) results.push(isFact(list[i]) && holds(node.condition, list[i]));
      return node.type === 'any' ? results.includes(true) : !results.includes(false);
    }
    case 'accumulate': {
      // Outside a session the working memory is this one fact; an aggregate of nothing is 0 (count, sum) or null.
      const counted = node.where === undefined || holds(node.where, root);
      const actual = node.field === undefined ? undefined : referenceLookup(root, node.field);
      let aggregate: number | null;
      if (node.function === 'count') aggregate = counted && (node.field === undefined || (actual !== undefined && actual !== null)) ? 1 : 0;
      else if (counted && typeof actual === 'number' && Number.isFinite(actual)) aggregate = actual;
      else aggregate = node.function === 'sum' ? 0 : null;
      return aggregate !== null && referenceCompare(node.op, aggregate, node.value);
    }
  }
}

/** Whether a condition holds for the facts; facts that are not an object match nothing. */
export function referenceMatches(condition: ConditionNode, facts: unknown): boolean {
  return isFact(facts) && holds(condition, facts);
}

/** What evaluate must answer: enabled rules of the domain (all when none) that match, by priority desc then id asc. */
export function referenceEvaluate(
  rules: readonly RuleInput[],
  facts: unknown,
  domain?: string,
): { fired_rules: number[]; actions: string[] } {
  const fired = rules
    .filter((rule) => (rule.enabled ?? true) && (domain === undefined || (rule.domain ?? 'default') === domain))
    .filter((rule) => referenceMatches(rule.condition_dsl as ConditionNode, facts))
    .sort((a, b) => (b.priority ?? 0) - (a.priority ?? 0) || a.id - b.id);
  const actions: string[] = [];
  for (const rule of fired) if (!actions.includes(rule.action)) actions.push(rule.action);
  return { fired_rules: fired.map((rule) => rule.id), actions };
}
