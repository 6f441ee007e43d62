import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor, MAX_PAGE_LIMIT, pageLimit, toPage } from '../../../src/store/cursor.ts';

describe('cursors', () => {
  it('round-trips an id through an opaque base64url string', () => {
    for (const id of [1, 42, 2_147_483_647, 999_999_999_999_999]) {
      const cursor = encodeCursor(id);
      expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(decodeCursor(cursor)).toBe(id);
    }
  });

  it('rejects anything it did not issue with VALIDATION_ERROR', () => {
    const bad = ['', 'not a cursor', '!!!', `${encodeCursor(12)}=`, encodeCursor(0), Buffer.from('-1').toString('base64url')];
    bad.push(
      Buffer.from('007').toString('base64url'),
      Buffer.from('1e3').toString('base64url'),
      Buffer.from('1234567890123456').toString('base64url'),
    );
    for (const cursor of bad) {
      expect(() => decodeCursor(cursor), cursor).toThrow(
        expect.objectContaining({ code: 'VALIDATION_ERROR', message: expect.stringMatching(/cursor is malformed/) }),
      );
    }
  });

  it('accepts page limits from 1 to the maximum only', () => {
    expect(pageLimit(1)).toBe(1);
    expect(pageLimit(MAX_PAGE_LIMIT)).toBe(MAX_PAGE_LIMIT);
    for (const limit of [0, -5, 2.5, MAX_PAGE_LIMIT + 1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => pageLimit(limit)).toThrow(expect.objectContaining({ code: 'VALIDATION_ERROR' }));
    }
  });

  it('cuts the extra row and points the cursor at the last item kept', () => {
    const rows = [{ id: 3 }, { id: 5 }, { id: 8 }];
    expect(toPage(rows, 2, (row) => row.id)).toEqual({ items: [{ id: 3 }, { id: 5 }], next_cursor: encodeCursor(5) });
    expect(toPage(rows, 3, (row) => row.id)).toEqual({ items: rows, next_cursor: null });
    expect(toPage([], 3, (row: { id: number }) => row.id)).toEqual({ items: [], next_cursor: null });
  });
});
