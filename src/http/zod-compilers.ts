// Routes declare zod schemas: these compilers validate requests with them and serialize replies without a second schema.
import type { FastifySchemaCompiler, FastifySerializerCompiler, FastifyTypeProvider } from 'fastify';
import type { z } from 'zod';
import { AppError } from '../errors.ts';

const MAX_LISTED_ISSUES = 10;
const PART_NAMES: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' };

/** "body.facts[2].amount: expected number" — one clause per issue, so the caller sees every problem at once. */
export function describeIssues(issues: readonly z.core.$ZodIssue[], part: string): string {
  const clauses = issues.slice(0, MAX_LISTED_ISSUES).map((issue) => `${formatPath(part, issue.path)}: ${issue.message}`);
  if (issues.length > MAX_LISTED_ISSUES) clauses.push(`and ${issues.length - MAX_LISTED_ISSUES} more`);
  return clauses.join('; ');
}

export function formatPath(root: string, path: readonly PropertyKey[]): string {
  let text = root;
  for (const segment of path) text += typeof segment === 'number' ? `[${segment}]` : `.${String(segment)}`;
  return text;
}

/**
 * True only for input the schema accepts and would return unchanged (deep-equal); false says nothing, the schema decides.
 * Called with parsed JSON only.
 */
export type FastAccept = (data: unknown) => boolean;

const fastAccepts = new WeakMap<z.ZodType, FastAccept>();

/** Lets a hot route skip zod for its common input; everything else, and every error message, still comes from the schema. */
export function withFastAccept<T extends z.ZodType>(schema: T, accept: FastAccept): T {
  fastAccepts.set(schema, accept);
  return schema;
}

export const zodValidatorCompiler: FastifySchemaCompiler<z.ZodType> = ({ schema, httpPart }) => {
  const part = PART_NAMES[httpPart ?? 'body'] ?? 'body';
  const validate = (data: unknown) => {
    const result = schema.safeParse(data);
    if (result.success) return { value: result.data };
    return { error: new AppError('VALIDATION_ERROR', describeIssues(result.error.issues, part)) };
  };
  const accept = fastAccepts.get(schema);
  if (accept === undefined) return validate;
  // Fastify keeps the request part as it is when a validator returns true.
  return (data: unknown) => accept(data) || validate(data);
};

/** Replies are built by typed handlers, so they are written as they are; the zod response schemas document them. */
export const jsonSerializerCompiler: FastifySerializerCompiler<z.ZodType> = () => (data) => JSON.stringify(data);

/** Types request parts and replies from the routes' zod schemas (`app.withTypeProvider<ZodTypeProvider>()`). */
export interface ZodTypeProvider extends FastifyTypeProvider {
  validator: this['schema'] extends z.ZodType ? z.output<this['schema']> : unknown;
  serializer: this['schema'] extends z.ZodType ? z.input<this['schema']> : unknown;
}
