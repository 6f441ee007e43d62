// Query and response bodies of the audit trail.
import { z } from 'zod';
import { components, digits, MAX_ID, pageQueryFields, timestampField } from './common.ts';

/**
 * The instant rounded up to a whole millisecond (Date drops finer digits): audit times are whole milliseconds, so
 * `at >= since` and `at < until` then mean what they did for the finer instant.
 */
function wholeMillisecondCeiling(text: string): Date {
  const date = new Date(text);
  const fraction = /\.(\d+)/.exec(text)?.[1] ?? '';
  // The last millisecond of 9999 stays in 9999: no entry can be later than it, and the database has no year 10000.
  if (/[1-9]/.test(fraction.slice(3)) && date.getTime() < LAST_MS) date.setTime(date.getTime() + 1);
  return date;
}

const LAST_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

const instant = (name: string) =>
  z.iso
    .datetime({ offset: true, error: `${name} must be an ISO 8601 date-time such as 2025-01-31T12:00:00Z` })
    .transform(wholeMillisecondCeiling)
    // Years 1 to 9999 in UTC: the database has no year 0, and embedded PGlite refuses a year past 9999.
    .refine((date) => date.getUTCFullYear() >= 1 && date.getUTCFullYear() <= 9999, `${name} must fall in the years 1 to 9999 (UTC)`);

export const auditQuery = z.strictObject({
  entity_type: z.enum(['rule', 'ruleset']).optional(),
  entity_id: digits('entity_id', MAX_ID).optional(),
  action: z.enum(['create', 'update', 'delete']).optional(),
  since: instant('since').optional().describe('Entries at or after this instant (years 1 to 9999, UTC).'),
  until: instant('until').optional().describe('Entries before this instant (years 1 to 9999, UTC).'),
  ...pageQueryFields,
});

export const auditEntrySchema = z
  .object({
    id: z.number().int(),
    at: timestampField,
    actor: z.string(),
    action: z.enum(['create', 'update', 'delete']),
    entity_type: z.enum(['rule', 'ruleset']),
    entity_id: z.number().int(),
    before: z.unknown().describe('The entity before the change; null on create.'),
    after: z.unknown().describe('The entity after the change; null on delete.'),
    prev_hash: z.string(),
    hash: z.string().describe('SHA-256 over this entry and prev_hash.'),
  })
  .register(components, { id: 'AuditEntry' });

export const auditVerifySchema = z
  .object({
    valid: z.boolean(),
    entries: z.number().int(),
    first_invalid_id: z.number().int().optional(),
  })
  .register(components, { id: 'AuditVerification' });
