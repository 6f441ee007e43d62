// The JSON condition DSL: the shape every transport accepts and schemas/condition-dsl.schema.json publishes.
import { z } from 'zod';
import { isStorableText, UNSTORABLE_TEXT } from './storable-text.ts';

/** Operators, with the word aliases that mean the same as their symbols. */
export const OPERATORS = [
  '==',
  '!=',
  '>',
  '>=',
  '<',
  '<=',
  'in',
  'not_in',
  'contains',
  'not_contains',
  'starts_with',
  'ends_with',
  'regex',
  'between',
  'eq',
  'ne',
  'gt',
  'gte',
  'lt',
  'lte',
] as const;
export type Operator = (typeof OPERATORS)[number];

/** The operator an alias stands for; canonical operators map to themselves. */
export const CANONICAL_OPERATOR = {
  '==': '==',
  '!=': '!=',
  '>': '>',
  '>=': '>=',
  '<': '<',
  '<=': '<=',
  in: 'in',
  not_in: 'not_in',
  contains: 'contains',
  not_contains: 'not_contains',
  starts_with: 'starts_with',
  ends_with: 'ends_with',
  regex: 'regex',
  between: 'between',
  eq: '==',
  ne: '!=',
  gt: '>',
  gte: '>=',
  lt: '<',
  lte: '<=',
} as const satisfies Record<Operator, string>;
export type CanonicalOperator = (typeof CANONICAL_OPERATOR)[Operator];

/** Limits that keep one rule bounded; exceeding one is a DSL error, not a crash. */
export const DSL_LIMITS = {
  maxDepth: 32,
  maxNodes: 1_000,
  maxListSize: 10_000,
  maxFieldLength: 256,
  maxStringLength: 10_000,
} as const;

/** Whether text holds at most `max` characters, counted as code points, as zod's `max` and JSON Schema's `maxLength` count. */
export function fitsLength(text: string, max: number): boolean {
  if (text.length <= max) return true;
  if (text.length > 2 * max) return false;
  let characters = 0;
  for (let i = 0; i < text.length; i += 1) {
    const unit = text.charCodeAt(i);
    // A surrogate pair is one character.
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i += 1;
    }
    characters += 1;
  }
  return characters <= max;
}

export type Scalar = string | number | boolean | null;
export type ConditionValue = Scalar | Scalar[];

/** Aggregates an `accumulate` node computes over a session's working memory (over the one fact outside a session). */
export const ACCUMULATE_FUNCTIONS = ['count', 'sum', 'avg', 'min', 'max'] as const;
export type AccumulateFunction = (typeof ACCUMULATE_FUNCTIONS)[number];

/** Operators an aggregate (a number, or null when nothing contributes) is compared with: the numeric ones. */
export const ACCUMULATE_OPERATORS = ['==', '!=', '>', '>=', '<', '<=', 'between', 'eq', 'ne', 'gt', 'gte', 'lt', 'lte'] as const;
export type AccumulateOperator = (typeof ACCUMULATE_OPERATORS)[number];

/** Longest accumulate window: one year. */
export const MAX_WINDOW_SECONDS = 31_536_000;

export type ConditionNode =
  | { type: 'condition'; field: string; op: Operator; value: ConditionValue }
  | { type: 'and' | 'or'; children: ConditionNode[] }
  | { type: 'not'; child: ConditionNode }
  | { type: 'exists'; field: string }
  | { type: 'any' | 'all'; field: string; condition: ConditionNode }
  | AccumulateNode;

/**
 * A copy of the condition with every node's keys in the documented order (type first), list values copied too. JSON
 * storage (jsonb) reorders keys, and readers should see a rule as it was written; the engine freezes this copy.
 */
export function inDocumentedOrder(node: ConditionNode): ConditionNode {
  switch (node.type) {
    case 'condition':
      return { type: node.type, field: node.field, op: node.op, value: Array.isArray(node.value) ? [...node.value] : node.value };
    case 'and':
    case 'or':
      return { type: node.type, children: node.children.map(inDocumentedOrder) };
    case 'not':
      return { type: node.type, child: inDocumentedOrder(node.child) };
    case 'exists':
      return { type: node.type, field: node.field };
    case 'any':
    case 'all':
      return { type: node.type, field: node.field, condition: inDocumentedOrder(node.condition) };
    case 'accumulate': {
      const { function: fn, field, where, window_seconds, op, value } = node;
      return {
        type: node.type,
        function: fn,
        ...(field === undefined ? {} : { field }),
        ...(where === undefined ? {} : { where: inDocumentedOrder(where) }),
        ...(window_seconds === undefined ? {} : { window_seconds }),
        op,
        value: Array.isArray(value) ? [...value] : value,
      };
    }
    default:
      // A node of a kind this version does not know is shown as stored.
      return node;
  }
}

export interface AccumulateNode {
  type: 'accumulate';
  function: AccumulateFunction;
  /** Required for sum, avg, min and max; for count, only facts where it is present and not null are counted. */
  field?: string;
  /** Only facts satisfying it contribute; paths are relative to each fact. */
  where?: ConditionNode;
  /** Sliding window by event time; all facts of the session when absent. */
  window_seconds?: number;
  op: AccumulateOperator;
  /** A number, or [low, high] for between. */
  value: number | number[];
}

const fieldPath = z
  .string()
  .refine(isStorableText, `field ${UNSTORABLE_TEXT}`)
  .min(1, 'field must be a non-empty path')
  .max(DSL_LIMITS.maxFieldLength, `field must be at most ${DSL_LIMITS.maxFieldLength} characters`)
  .describe('Dotted path into the fact, e.g. user.profile.age; a numeric segment indexes an array (items.0.sku).');

const scalar = z.union([
  z.string().max(DSL_LIMITS.maxStringLength).refine(isStorableText, `a string value ${UNSTORABLE_TEXT}`),
  z.number(),
  z.boolean(),
  z.null(),
]);
const conditionValue = z.union([scalar, z.array(scalar).max(DSL_LIMITS.maxListSize)]);

const comparison = z
  .strictObject({
    type: z.literal('condition'),
    field: fieldPath,
    op: z.enum(OPERATORS),
    value: conditionValue,
  })
  .superRefine((node, ctx) => {
    const problem = valueProblem(CANONICAL_OPERATOR[node.op], node.value);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', path: ['value'], message: problem });
  })
  .describe('One comparison of a fact field with a value.');

const accumulate = z
  .strictObject({
    type: z.literal('accumulate'),
    function: z.enum(ACCUMULATE_FUNCTIONS),
    field: fieldPath.optional(),
    where: z
      .lazy(() => conditionNodeSchema)
      .optional()
      .describe('Only facts satisfying this condition contribute; no accumulate inside it.'),
    window_seconds: z
      .number()
      .int('window_seconds must be a whole number of seconds')
      .min(1, 'window_seconds must be at least 1')
      .max(MAX_WINDOW_SECONDS, `window_seconds must be at most ${MAX_WINDOW_SECONDS} (one year)`)
      .optional()
      .describe('Sliding window by event time, in seconds; all facts of the session when absent.'),
    op: z.enum(ACCUMULATE_OPERATORS),
    value: z.union([z.number(), z.array(z.number()).max(2)]),
  })
  .superRefine((node, ctx) => {
    for (const problem of accumulateProblems(node)) ctx.addIssue({ code: 'custom', path: [problem.key], message: problem.message });
  })
  .describe(
    'An aggregate (count, sum, avg, min, max) over the facts of a session, optionally filtered by where and windowed, ' +
      'compared with a number. Outside a session the working memory is the one fact evaluated.',
  );

export const conditionNodeSchema: z.ZodType<ConditionNode> = z.lazy(() =>
  z.discriminatedUnion('type', [
    comparison,
    z
      .strictObject({ type: z.enum(['and', 'or']), children: z.array(conditionNodeSchema).min(1, 'needs at least one child') })
      .describe('All (and) or at least one (or) of the children hold.'),
    z.strictObject({ type: z.literal('not'), child: conditionNodeSchema }).describe('The child does not hold.'),
    z.strictObject({ type: z.literal('exists'), field: fieldPath }).describe('The field is present and not null.'),
    z
      .strictObject({ type: z.enum(['any', 'all']), field: fieldPath, condition: conditionNodeSchema })
      .describe('Some (any) or every (all) element of the array at field satisfies condition; paths inside are relative to the element.'),
    accumulate,
  ]),
);

/** What is wrong with an accumulate node whose keys have the right types (field per function, value per operator): every problem. */
export function accumulateProblems(node: {
  function: AccumulateFunction;
  field?: string | undefined;
  op: AccumulateOperator;
  value: number | number[];
}): { key: 'field' | 'value'; message: string }[] {
  const problems: { key: 'field' | 'value'; message: string }[] = [];
  if (node.function !== 'count' && node.field === undefined) {
    problems.push({ key: 'field', message: `function ${node.function} needs a field: the numeric fact field it aggregates` });
  }
  const op = CANONICAL_OPERATOR[node.op];
  const value = node.value;
  if (op === 'between') {
    if (!Array.isArray(value) || value.length !== 2) problems.push({ key: 'value', message: 'operator between takes [low, high] numbers' });
    else if (value[0]! > value[1]!) problems.push({ key: 'value', message: 'operator between needs low <= high' });
  } else if (typeof value !== 'number') {
    problems.push({ key: 'value', message: `operator ${op} takes a number: the aggregate is a number` });
  }
  return problems;
}

/** Why a value does not suit an operator, or undefined when it does. Pure shape rules; regex safety is the engine's check. */
export function valueProblem(op: CanonicalOperator, value: ConditionValue): string | undefined {
  switch (op) {
    case '==':
    case '!=':
    case 'contains':
    case 'not_contains':
      return Array.isArray(value) ? `operator ${op} takes a single value, not an array` : undefined;
    case '>':
    case '>=':
    case '<':
    case '<=':
      return typeof value === 'number' || typeof value === 'string' ? undefined : `operator ${op} takes a number or a string`;
    case 'in':
    case 'not_in':
      return Array.isArray(value) ? undefined : `operator ${op} takes an array of values`;
    case 'starts_with':
    case 'ends_with':
      return typeof value === 'string' ? undefined : `operator ${op} takes a string`;
    case 'regex':
      return typeof value === 'string' ? undefined : 'operator regex takes a pattern string';
    case 'between': {
      if (!Array.isArray(value) || value.length !== 2) return 'operator between takes [low, high]';
      const [lo, hi] = value;
      const bothNumbers = typeof lo === 'number' && typeof hi === 'number';
      const bothStrings = typeof lo === 'string' && typeof hi === 'string';
      if (!bothNumbers && !bothStrings) return 'operator between takes two numbers or two strings';
      return lo > hi ? 'operator between needs low <= high' : undefined;
    }
  }
}
