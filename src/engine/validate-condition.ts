// validateCondition: every problem of a DSL tree with its path. A fast bounded walk decides; zod only words the messages.
import type { z } from 'zod';
import {
  ACCUMULATE_FUNCTIONS,
  ACCUMULATE_OPERATORS,
  type AccumulateFunction,
  type AccumulateOperator,
  accumulateProblems,
  CANONICAL_OPERATOR,
  type ConditionValue,
  conditionNodeSchema,
  DSL_LIMITS,
  fitsLength,
  MAX_WINDOW_SECONDS,
  OPERATORS,
  type Operator,
  valueProblem,
} from '../contracts/condition-dsl.ts';
import type { ValidationIssue, ValidationResult } from '../contracts/evaluation.ts';
import { isStorableText } from '../contracts/storable-text.ts';
import { type RegexCheckOptions, regexProblem } from './regex-safety.ts';

type PathSegment = string | number;
type NodeObject = Record<string, unknown>;

const NODE_TYPES = ['condition', 'and', 'or', 'not', 'exists', 'any', 'all', 'accumulate'] as const;
const OPERATOR_SET: ReadonlySet<string> = new Set(OPERATORS);
const ACCUMULATE_OPERATOR_SET: ReadonlySet<string> = new Set(ACCUMULATE_OPERATORS);
const ACCUMULATE_FUNCTION_SET: ReadonlySet<string> = new Set(ACCUMULATE_FUNCTIONS);
const ACCUMULATE_KEYS: ReadonlySet<string> = new Set(['type', 'function', 'field', 'where', 'window_seconds', 'op', 'value']);
const hasOwn = Object.hasOwn;

/** Renders a path the way every error reports it: root, root.children[1].op, root.child.condition.value. */
export function formatPath(segments: readonly PropertyKey[]): string {
  let path = 'root';
  for (const segment of segments) path += typeof segment === 'number' ? `[${segment}]` : `.${String(segment)}`;
  return path;
}

interface WalkState {
  readonly segments: PathSegment[];
  nodes: number;
  tooManyNodes: boolean;
  tooDeep: boolean;
  /** False once anything differs from the zod schema; zod is then asked for the wording. */
  shapeValid: boolean;
  /** Depth of any/all conditions and accumulate wheres around the current node: no accumulate may appear there. */
  inScope: number;
  readonly extra: ValidationIssue[];
  /**
   * Problems between keys (an operator and its value, a function and its field), found even where another key of the
   * node is wrong: zod checks them only once every key has its type, so it would report them one fix later.
   */
  readonly crossKey: ValidationIssue[];
  readonly regex: RegexCheckOptions;
}

function isPlainObject(value: unknown): value is NodeObject {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** True when the object has exactly these own keys (the schema's objects are strict). */
function hasExactKeys(node: NodeObject, keys: readonly string[]): boolean {
  let count = 0;
  for (const key in node) {
    if (!hasOwn(node, key)) return false;
    count += 1;
  }
  if (count !== keys.length) return false;
  for (const key of keys) if (!hasOwn(node, key)) return false;
  return true;
}

function isField(value: unknown): boolean {
  return typeof value === 'string' && value.length >= 1 && fitsLength(value, DSL_LIMITS.maxFieldLength) && isStorableText(value);
}

function isScalarValue(value: unknown): boolean {
  if (typeof value === 'string') return fitsLength(value, DSL_LIMITS.maxStringLength) && isStorableText(value);
  if (typeof value === 'number') return Number.isFinite(value);
  return typeof value === 'boolean' || value === null;
}

function isConditionValue(value: unknown): value is ConditionValue {
  if (!Array.isArray(value)) return isScalarValue(value);
  if (value.length > DSL_LIMITS.maxListSize) return false;
  for (let i = 0; i < value.length; i += 1) if (!isScalarValue(value[i])) return false;
  return true;
}

function checkComparison(node: NodeObject, state: WalkState): void {
  const { field, op, value } = node;
  if (!hasExactKeys(node, ['type', 'field', 'op', 'value']) || !isField(field) || typeof op !== 'string' || !OPERATOR_SET.has(op)) {
    state.shapeValid = false;
  }
  if (!isConditionValue(value)) {
    state.shapeValid = false;
    return;
  }
  if (typeof op !== 'string' || !OPERATOR_SET.has(op)) return;
  const canonical = CANONICAL_OPERATOR[op as Operator];
  const problem = valueProblem(canonical, value);
  if (problem !== undefined) {
    state.shapeValid = false;
    state.crossKey.push({ path: formatPath([...state.segments, 'value']), message: problem });
  } else if (canonical === 'regex') {
    const problem = regexProblem(value as string, state.regex);
    if (problem !== undefined) state.extra.push({ path: formatPath([...state.segments, 'value']), message: problem });
  }
}

/** The accumulate node checks the zod schema makes too, so zod is asked for wording only when one fails. */
function checkAccumulate(node: NodeObject, depth: number, state: WalkState): void {
  if (state.inScope > 0) {
    // Aggregates are over the session's facts, never over an element or inside another aggregate's filter.
    state.extra.push({
      path: formatPath([...state.segments, 'type']),
      message: 'accumulate cannot be used inside any, all or the where of another accumulate',
    });
  }
  let keys = 0;
  for (const key in node) {
    if (!hasOwn(node, key) || !ACCUMULATE_KEYS.has(key)) state.shapeValid = false;
    keys += 1;
  }
  const { function: fn, field, window_seconds: window, op, value } = node;
  const valueShape =
    (typeof value === 'number' && Number.isFinite(value)) ||
    (Array.isArray(value) && value.length <= 2 && value.every((item) => typeof item === 'number' && Number.isFinite(item)));
  const fnKnown = typeof fn === 'string' && ACCUMULATE_FUNCTION_SET.has(fn);
  const opKnown = typeof op === 'string' && ACCUMULATE_OPERATOR_SET.has(op);
  if (
    keys < 4 ||
    !fnKnown ||
    (field !== undefined && !isField(field)) ||
    (window !== undefined && !(Number.isInteger(window) && (window as number) >= 1 && (window as number) <= MAX_WINDOW_SECONDS)) ||
    !opKnown ||
    !valueShape
  ) {
    state.shapeValid = false;
  }
  // The function's need of a field and the operator's of its value are checked apart: each whatever the other keys are.
  // Stand-ins (count needs no field, `> 0` is fine) keep a key zod reports anyway from being reported twice.
  const comparable = opKnown && valueShape;
  const problems = accumulateProblems({
    function: fnKnown ? (fn as AccumulateFunction) : 'count',
    // Only whether a field is there matters to these checks, whatever its type.
    field: field === undefined ? undefined : '',
    op: comparable ? (op as AccumulateOperator) : '>',
    value: comparable ? (value as number | number[]) : 0,
  });
  if (problems.length > 0) state.shapeValid = false;
  for (const problem of problems) state.crossKey.push({ path: formatPath([...state.segments, problem.key]), message: problem.message });
  if (hasOwn(node, 'where')) {
    state.inScope += 1;
    descend(node.where, 'where', undefined, depth + 1, state);
    state.inScope -= 1;
  }
}

function descend(child: unknown, key: string, index: number | undefined, depth: number, state: WalkState): void {
  state.segments.push(key);
  if (index !== undefined) state.segments.push(index);
  visit(child, depth, state);
  state.segments.length -= index === undefined ? 1 : 2;
}

/** Recursion is bounded by maxDepth + 1, so even a 100,000-deep input cannot overflow the stack. */
function visit(node: unknown, depth: number, state: WalkState): void {
  if (state.tooManyNodes) return;
  state.nodes += 1;
  if (state.nodes > DSL_LIMITS.maxNodes) {
    state.tooManyNodes = true;
    return;
  }
  if (depth > DSL_LIMITS.maxDepth) {
    state.tooDeep = true;
    state.extra.push({ path: formatPath(state.segments), message: `conditions are nested deeper than ${DSL_LIMITS.maxDepth} levels` });
    return;
  }
  if (!isPlainObject(node)) {
    state.shapeValid = false;
    return;
  }
  switch (node.type) {
    case 'condition':
      checkComparison(node, state);
      return;
    case 'and':
    case 'or': {
      const children = node.children;
      if (!hasExactKeys(node, ['type', 'children']) || !Array.isArray(children) || children.length === 0) state.shapeValid = false;
      if (!Array.isArray(children)) return;
      for (let i = 0; i < children.length && !state.tooManyNodes; i += 1) descend(children[i], 'children', i, depth + 1, state);
      return;
    }
    case 'not':
      if (!hasExactKeys(node, ['type', 'child'])) state.shapeValid = false;
      descend(node.child, 'child', undefined, depth + 1, state);
      return;
    case 'exists':
      if (!hasExactKeys(node, ['type', 'field']) || !isField(node.field)) state.shapeValid = false;
      return;
    case 'any':
    case 'all':
      if (!hasExactKeys(node, ['type', 'field', 'condition']) || !isField(node.field)) state.shapeValid = false;
      state.inScope += 1;
      descend(node.condition, 'condition', undefined, depth + 1, state);
      state.inScope -= 1;
      return;
    case 'accumulate':
      checkAccumulate(node, depth, state);
      return;
    default:
      state.shapeValid = false;
  }
}

/** A placeholder that zod accepts, standing in for subtrees already reported as too deep. */
const TRUNCATED = Object.freeze({ type: 'exists', field: 'truncated' });

/** A copy of the input cut at maxDepth, so zod never recurses deeper than the limit. */
function truncate(node: unknown, depth: number): unknown {
  if (depth > DSL_LIMITS.maxDepth) return TRUNCATED;
  if (!isPlainObject(node)) return node;
  const copy: NodeObject = { ...node };
  if (Array.isArray(node.children)) copy.children = node.children.map((child) => truncate(child, depth + 1));
  if (hasOwn(node, 'child')) copy.child = truncate(node.child, depth + 1);
  if (hasOwn(node, 'condition')) copy.condition = truncate(node.condition, depth + 1);
  if (hasOwn(node, 'where')) copy.where = truncate(node.where, depth + 1);
  return copy;
}

function valueAt(root: unknown, segments: readonly PropertyKey[]): unknown {
  let current = root;
  for (const segment of segments) {
    if (typeof current !== 'object' || current === null) return undefined;
    current = (current as Record<PropertyKey, unknown>)[segment];
  }
  return current;
}

/** A short, never-throwing rendering of an offending input value for messages. */
function show(value: unknown): string {
  if (value === undefined) return 'undefined';
  try {
    const text = JSON.stringify(value) ?? String(value);
    return text.length > 60 ? `${text.slice(0, 57)}...` : text;
  } catch {
    return typeof value;
  }
}

function hasTooBig(issues: readonly z.core.$ZodIssue[][]): boolean {
  return issues.some((branch) =>
    branch.some((issue) => issue.code === 'too_big' || (issue.code === 'invalid_union' && hasTooBig(issue.errors))),
  );
}

/** zod's issue, worded for rule authors where zod's default wording is generic. */
function issueMessage(issue: z.core.$ZodIssue, input: unknown): string {
  const last = issue.path[issue.path.length - 1];
  const received = valueAt(input, issue.path);
  if (issue.code === 'invalid_union' && last === 'type') {
    const allowed = NODE_TYPES.join(', ');
    return received === undefined
      ? `type is required: one of ${allowed}`
      : `unknown node type ${show(received)}: expected one of ${allowed}`;
  }
  const parentType = (valueAt(input, issue.path.slice(0, -1)) as { type?: unknown } | undefined)?.type;
  if (parentType === 'accumulate') {
    if (issue.code === 'invalid_union' && last === 'value') return 'value must be a finite number, or [low, high] numbers for between';
    if (issue.code === 'invalid_value' && last === 'op') {
      return `unknown operator ${show(received)} for accumulate: expected one of ${ACCUMULATE_OPERATORS.join(', ')}`;
    }
    if (issue.code === 'invalid_value' && last === 'function') {
      return `unknown function ${show(received)}: expected one of ${ACCUMULATE_FUNCTIONS.join(', ')}`;
    }
  }
  if (issue.code === 'invalid_union' && last === 'value') {
    if (hasTooBig(issue.errors)) {
      return `value is too large: lists hold at most ${DSL_LIMITS.maxListSize} values and strings at most ${DSL_LIMITS.maxStringLength} characters`;
    }
    return 'value must be a string, a finite number, a boolean, null, or a list of those';
  }
  if (issue.code === 'invalid_value' && last === 'op') return `unknown operator ${show(received)}: expected one of ${OPERATORS.join(', ')}`;
  // A list item's path ends in its index: value[3].
  const inValue = last === 'value' || (typeof last === 'number' && issue.path[issue.path.length - 2] === 'value');
  if (issue.code === 'too_big' && issue.origin === 'string' && inValue) {
    return `value is too large: strings hold at most ${DSL_LIMITS.maxStringLength} characters`;
  }
  return issue.message;
}

function zodIssues(input: unknown): ValidationIssue[] {
  const parsed = conditionNodeSchema.safeParse(input);
  if (parsed.success) return [];
  return parsed.error.issues.flatMap((issue) =>
    // Strict objects report their unknown keys on the node: each is reported at its own path, as every other key is.
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => ({ path: formatPath([...issue.path, key]), message: `unknown key ${show(key)}` }))
      : [{ path: formatPath(issue.path), message: issueMessage(issue, input) }],
  );
}

/**
 * Validates a condition DSL tree and returns every problem, each with its path (`root.children[1].op`).
 * Checks the zod schema of the contract, the limits of DSL_LIMITS (depth, node count, list size) and regex safety.
 * Never throws, whatever the input.
 */
export function validateCondition(dsl: unknown, options: RegexCheckOptions = {}): ValidationResult {
  try {
    const state: WalkState = {
      regex: options,
      segments: [],
      nodes: 0,
      tooManyNodes: false,
      tooDeep: false,
      shapeValid: true,
      inScope: 0,
      extra: [],
      crossKey: [],
    };
    visit(dsl, 1, state);
    if (state.shapeValid && !state.tooManyNodes && state.extra.length === 0) return { valid: true, errors: [] };
    const errors: ValidationIssue[] = [];
    if (state.tooManyNodes) {
      errors.push({ path: 'root', message: `condition has more than ${DSL_LIMITS.maxNodes} nodes` });
    } else if (!state.shapeValid) {
      errors.push(...zodIssues(state.tooDeep ? truncate(dsl, 1) : dsl));
      const reported = new Set(errors.map((issue) => `${issue.path}\n${issue.message}`));
      for (const issue of state.crossKey) if (!reported.has(`${issue.path}\n${issue.message}`)) errors.push(issue);
      // The walk found a problem zod words nothing for: still refused, never reported valid.
      if (errors.length === 0) errors.push({ path: 'root', message: 'condition does not match the condition DSL' });
    }
    errors.push(...state.extra);
    return { valid: errors.length === 0, errors };
  } catch (error) {
    // Exotic inputs (throwing getters, revoked proxies) are refused, never crash the caller.
    return {
      valid: false,
      errors: [{ path: 'root', message: `condition could not be read: ${error instanceof Error ? error.message : String(error)}` }],
    };
  }
}
