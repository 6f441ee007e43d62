// Bodies of the health endpoints.
import { z } from 'zod';
import { components } from './common.ts';

export const healthSchema = z
  .object({ status: z.literal('healthy'), version: z.string().describe('Service version (package.json).') })
  .register(components, { id: 'Health' });

export const readinessSchema = z
  .object({
    status: z.enum(['ready', 'unavailable']),
    checks: z.record(z.string(), z.enum(['up', 'down'])).describe('State of each dependency: database, engine, and any other configured.'),
    details: z
      .record(z.string(), z.unknown())
      .optional()
      .describe('More about some dependencies: `executions` (records waiting to be written), `kafka` (the consumer state).'),
    detail: z.string().optional(),
    error_code: z.literal('UNAVAILABLE').optional(),
  })
  .register(components, { id: 'Readiness' });
