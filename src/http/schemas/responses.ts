// Error replies for the OpenAPI document: every listed status answers with the {detail, error_code} body.
import type { z } from 'zod';
import { errorBodySchema } from './common.ts';

/**
 * Every API route may answer 400 (a query parameter it does not declare), 413 and 415 (a body over the limit or not JSON,
 * even where the route takes none) and 503 (shutting down, or a dependency away) besides the statuses it lists.
 */
const ALWAYS = [400, 413, 415, 503];

export function errorResponses(...statuses: number[]): Record<number, z.ZodType> {
  const all = [...new Set([...statuses, ...ALWAYS])].sort((a, b) => a - b);
  return Object.fromEntries(all.map((status) => [status, errorBodySchema.describe(`Error (see docs/errors.md).`)]));
}
