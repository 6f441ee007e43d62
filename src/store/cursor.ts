// Keyset paging cursors: base64url of the last id on the page, rejected unless they decode to exactly that.
import { AppError } from '../errors.ts';

/** The largest page a caller may ask for. */
export const MAX_PAGE_LIMIT = 1_000;

export function encodeCursor(id: number): string {
  return Buffer.from(String(id), 'utf8').toString('base64url');
}

/** The id a cursor stands for; AppError VALIDATION_ERROR unless it is one this store issued. */
export function decodeCursor(cursor: string): number {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  // Node decodes base64url leniently, so only a cursor that re-encodes to itself is accepted.
  if (!/^[1-9][0-9]{0,14}$/.test(text) || encodeCursor(Number(text)) !== cursor) {
    throw new AppError('VALIDATION_ERROR', 'cursor is malformed: pass next_cursor from the previous page unchanged');
  }
  return Number(text);
}

/** The page size, checked: an integer from 1 to MAX_PAGE_LIMIT, else AppError VALIDATION_ERROR. */
export function pageLimit(limit: number): number {
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_LIMIT) {
    throw new AppError('VALIDATION_ERROR', `limit must be an integer from 1 to ${MAX_PAGE_LIMIT}, got ${String(limit)}`);
  }
  return limit;
}

/** Cuts the one extra row fetched to learn whether another page follows. */
export function toPage<T>(rows: T[], limit: number, idOf: (item: T) => number): { items: T[]; next_cursor: string | null } {
  if (rows.length <= limit) return { items: rows, next_cursor: null };
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  return { items, next_cursor: last === undefined ? null : encodeCursor(idOf(last)) };
}
