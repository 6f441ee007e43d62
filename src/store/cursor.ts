// Keyset paging cursors: the list, the last id on the page and a check, base64url-encoded; refused unless issued as is.
import { createHash } from 'node:crypto';
import { AppError } from '../errors.ts';

/** The largest page a caller may ask for. */
export const MAX_PAGE_LIMIT = 1_000;

/** The lists paged by cursor: a cursor of one is refused by the others. */
export type CursorList = 'rules' | 'rulesets' | 'audit';

/** Not a secret: it only makes a cursor typed by hand, or cut from another list's, fail instead of paging from anywhere. */
function check(list: CursorList, id: number): string {
  return createHash('sha256').update(`cursor:${list}:${id}`).digest('base64url').slice(0, 8);
}

export function encodeCursor(list: CursorList, id: number): string {
  return Buffer.from(`${list}:${id}:${check(list, id)}`, 'utf8').toString('base64url');
}

/** The id a cursor of `list` stands for; AppError VALIDATION_ERROR unless this service issued it for that list. */
export function decodeCursor(list: CursorList, cursor: string): number {
  const [name, digits, sum, ...rest] = Buffer.from(cursor, 'base64url').toString('utf8').split(':');
  const id = Number(digits);
  // Node decodes base64url leniently, so only a cursor that re-encodes to itself is accepted.
  if (
    name !== list ||
    rest.length > 0 ||
    !/^[1-9][0-9]{0,14}$/.test(digits ?? '') ||
    sum !== check(list, id) ||
    encodeCursor(list, id) !== cursor
  ) {
    throw new AppError('VALIDATION_ERROR', 'cursor is malformed: follow the previous page\'s Link rel="next" URL unchanged');
  }
  return id;
}

/** The page size, checked: an integer from 1 to MAX_PAGE_LIMIT, else AppError VALIDATION_ERROR. */
export function pageLimit(limit: number): number {
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_LIMIT) {
    throw new AppError('VALIDATION_ERROR', `limit must be an integer from 1 to ${MAX_PAGE_LIMIT}, got ${String(limit)}`);
  }
  return limit;
}

/** Cuts the one extra row fetched to learn whether another page follows. */
export function toPage<T>(
  list: CursorList,
  rows: T[],
  limit: number,
  idOf: (item: T) => number,
): { items: T[]; next_cursor: string | null } {
  if (rows.length <= limit) return { items: rows, next_cursor: null };
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  return { items, next_cursor: last === undefined ? null : encodeCursor(list, idOf(last)) };
}
