// Error replies for the OpenAPI document: every listed status answers with the {detail, error_code} body.
import type { z } from 'zod';
import { errorBodySchema } from './common.ts';

/**
 * Every API route may answer 400 (a query parameter it does not declare), 408 (a request that took too long to arrive),
 * 413 and 415 (a body over the limit or not JSON, even where the route takes none), 431 (headers too large), 500 (a
 * fault of the service) and 503 (shutting down, or a dependency away) besides the statuses it lists.
 */
const ALWAYS = [400, 408, 413, 415, 431, 500, 503];

/**
 * What even a route that takes no input answers besides its own statuses, before or beside it: 400 (a request that is
 * not valid HTTP/1.1), 408, 431 and 500.
 */
const TRANSPORT = [400, 408, 431, 500];

export function errorResponses(...statuses: number[]): Record<number, z.ZodType> {
  return errorBodies([...statuses, ...ALWAYS]);
}

/** The error statuses of the health routes, which ignore query and body: those of the request's transport only. */
export function transportErrorResponses(): Record<number, z.ZodType> {
  return errorBodies(TRANSPORT);
}

function errorBodies(statuses: readonly number[]): Record<number, z.ZodType> {
  const all = [...new Set(statuses)].sort((a, b) => a - b);
  return Object.fromEntries(all.map((status) => [status, errorBodySchema.describe(`Error (see docs/errors.md).`)]));
}
