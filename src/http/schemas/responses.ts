// Error replies for the OpenAPI document: every listed status answers with the {detail, error_code} body.
import type { z } from 'zod';
import { errorBodySchema } from './common.ts';

export function errorResponses(...statuses: number[]): Record<number, z.ZodType> {
  return Object.fromEntries(statuses.map((status) => [status, errorBodySchema.describe(`Error (see docs/errors.md).`)]));
}
