// Event time of a session fact (docs/sessions.md): the configured field as ISO 8601 or epoch ms, else arrival time.
import { getPath } from '../engine/index.ts';
import { AppError } from '../errors.ts';

/** Largest magnitude a JavaScript Date holds, in ms either side of 1970. */
const MAX_EPOCH_MS = 8.64e15;

// A date, or a date-time with a zone (Z or ±hh:mm): a date-time without one would be read in the server's zone.
const ISO_8601 = /^\d{4}-\d{2}-\d{2}(?:[Tt ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:[Zz]|[+-]\d{2}:?\d{2}))?$/;

/**
 * Epoch ms of the event: the value at `field` (a DSL path) when present and not null, else undefined (the fact takes
 * its arrival time, which the session store settles). Throws AppError VALIDATION_ERROR when the value is there but is
 * neither an ISO 8601 string nor finite epoch ms.
 */
export function eventTimeOf(event: unknown, field: string): number | undefined {
  const value = getPath(event, field);
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number' && Number.isFinite(value) && Math.abs(value) <= MAX_EPOCH_MS) return value;
  if (typeof value === 'string' && ISO_8601.test(value) && realDate(value)) {
    // The usual form (T and Z in capitals) parses as it is.
    const ms = Date.parse(value[10] === ' ' || /[tz]/.test(value) ? value.replace(' ', 'T').toUpperCase() : value);
    if (Number.isFinite(ms)) return ms;
  }
  throw new AppError(
    'VALIDATION_ERROR',
    `event.${field} must be an ISO 8601 timestamp with a zone (2024-05-01T12:00:00Z) or epoch milliseconds; got ${describe(value)}.`,
  );
}

/** Date.parse rolls 2024-02-30 over to March; the calendar date must exist. */
function realDate(text: string): boolean {
  const year = Number(text.slice(0, 4));
  const month = Number(text.slice(5, 7));
  const day = Number(text.slice(8, 10));
  return month >= 1 && month <= 12 && day >= 1 && day <= daysIn(year, month);
}

function daysIn(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

function describe(value: unknown): string {
  const text = JSON.stringify(value) ?? typeof value;
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
