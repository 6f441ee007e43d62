// The JSON condition DSL: the shape every transport accepts and schemas/condition-dsl.schema.json publishes.
import { z } from 'zod';

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

export type Scalar = string | number | boolean | null;
export type ConditionValue = Scalar | Scalar[];

export type ConditionNode =
  | { type: 'condition'; field: string; op: Operator; value: ConditionValue }
  | { type: 'and' | 'or'; children: ConditionNode[] }
  | { type: 'not'; child: ConditionNode }
  | { type: 'exists'; field: string }
  | { type: 'any' | 'all'; field: string; condition: ConditionNode };

const fieldPath = z
  .string()
  .min(1, 'field must be a non-empty path')
  .max(DSL_LIMITS.maxFieldLength, `field must be at most ${DSL_LIMITS.maxFieldLength} characters`)
  .describe('Dotted path into the fact, e.g. user.profile.age; a numeric segment indexes an array (items.0.sku).');

const scalar = z.union([z.string().max(DSL_LIMITS.maxStringLength), z.number(), z.boolean(), z.null()]);
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
  ]),
);

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
