// Building blocks of the HTTP bodies: facts, ids, paging and the error body, each described for the OpenAPI document.
import { z } from 'zod';
import { exceedsFactLimits, factLimitProblem, MAX_FACT_ARRAY, MAX_FACT_DEPTH } from '../../contracts/json-depth.ts';
import { ruleFieldSchemas } from '../../contracts/rule.ts';
import { ERROR_CODES, type ErrorCode } from '../../errors.ts';

/** Schemas shown as named components in the OpenAPI document. */
export const components = z.registry<{ id: string }>();

/** JSON Schema keywords for checks z.toJSONSchema cannot derive (refinements), merged into the schema's OpenAPI entry. */
export const refinementKeywords = new WeakMap<z.ZodType, Record<string, unknown>>();

/** Documents what a schema's refinements check, so clients validating against the OpenAPI refuse what the service refuses. */
export function documentRefinement<T extends z.ZodType>(schema: T, keywords: Record<string, unknown>): T {
  refinementKeywords.set(schema, keywords);
  return schema;
}

/** Largest id the store can hold (PostgreSQL integer). */
export const MAX_ID = 2_147_483_647;
export const DEFAULT_PAGE_LIMIT = 100;
export const MAX_PAGE_LIMIT = 1_000;

/**
 * A condition DSL tree, taken as it comes: the use cases validate it so every problem is reported with its path as
 * DSL_ERROR. The OpenAPI document shows it as a reference to the ConditionNode component.
 */
export const conditionDslField = z
  .custom<unknown>((value) => value !== undefined, { error: 'condition_dsl is required' })
  .describe('Condition tree in the JSON condition DSL (see ConditionNode).');

/**
 * A condition DSL tree to validate: any JSON value, since telling what is wrong with it is the point. Shown as such in the
 * OpenAPI document, where ConditionNode would refuse the very trees /validate answers `valid: false` for. A schema of its
 * own, not `conditionDslField.describe(...)`: the document would still show that one as ConditionNode.
 */
export const anyConditionDslField = z
  .custom<unknown>((value) => value !== undefined, { error: 'condition_dsl is required' })
  .describe('Any JSON value: checked against the JSON condition DSL (ConditionNode), every problem reported in errors.');

export type Facts = Record<string, unknown>;

export const factsSchema = z
  .record(z.string(), z.unknown())
  .superRefine((facts, ctx) => {
    const problem = factLimitProblem(facts);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
  })
  .describe(
    `A fact: a JSON object of named fields, nested at most ${MAX_FACT_DEPTH} levels, with no array of more than ${MAX_FACT_ARRAY.toLocaleString('en-US')} elements (else 400 VALIDATION_ERROR).`,
  );

export const domainField = ruleFieldSchemas.domain.describe('Only rules of this domain are considered; all domains when absent.');

/** True for a fact factsSchema accepts and copies unchanged; false leaves the decision to it. For parsed JSON only. */
export function isCommonFacts(value: unknown): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    // What JSON.parse makes; zod's plain-object test has further cases, left to it.
    (value as { constructor?: unknown }).constructor === Object &&
    // zod leaves an own __proto__ key out of its copy.
    !Object.hasOwn(value, '__proto__') &&
    !exceedsFactLimits(value)
  );
}

export const errorBodySchema = z
  .object({
    detail: z.string().describe('What went wrong, for a human.'),
    error_code: z.enum(Object.keys(ERROR_CODES) as [ErrorCode, ...ErrorCode[]]).describe('Stable code; see docs/errors.md.'),
  })
  .register(components, { id: 'Error' });

/** A whole number in a path or query: shown in the OpenAPI document as the integer it stands for, with its bounds. */
export const digits = (name: string, max: number) =>
  documentRefinement(
    z
      .string()
      .regex(/^\d{1,16}$/, `${name} must be a positive integer`)
      .transform(Number)
      .pipe(z.number().int().min(1, `${name} must be at least 1`).max(max, `${name} must be at most ${max}`)),
    { type: 'integer', minimum: 1, maximum: max, pattern: undefined },
  );

export const idParams = z.strictObject({ id: digits('id', MAX_ID) });

export const idField = z.number().int().min(1).max(MAX_ID);

/** `?limit=` and `?cursor=` of every listing. */
export const pageQueryFields = {
  limit: documentRefinement(
    digits('limit', MAX_PAGE_LIMIT)
      .default(DEFAULT_PAGE_LIMIT)
      .describe(`Page size, 1 to ${MAX_PAGE_LIMIT}; default ${DEFAULT_PAGE_LIMIT}.`),
    { default: DEFAULT_PAGE_LIMIT },
  ),
  cursor: z.string().min(1).max(200).optional().describe('Opaque cursor from the previous page\'s Link rel="next" header.'),
};

export const pageQuery = z.strictObject(pageQueryFields);

/** Query-string booleans are the words true and false. */
export const queryBoolean = z.enum(['true', 'false']).transform((value) => value === 'true');

export const timestampField = z.string().describe('ISO 8601 timestamp (UTC).');
