import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor, MAX_PAGE_LIMIT, pageLimit, toPage } from '../../../src/store/cursor.ts';

describe('cursors', () => {
  it('round-trips an id through an opaque base64url string', () => {
    for (const id of [1, 42, 2_147_483_647, 999_999_999_999_999]) {
      const cursor = encodeCursor('rules', id);
      expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(decodeCursor('rules', cursor)).toBe(id);
    }
  });

  it('rejects anything it did not issue with VALIDATION_ERROR', () => {
    const typed = (text: string) => Buffer.from(text).toString('base64url');
    const bad = ['', 'not a cursor', '!!!', `${encodeCursor('rules', 12)}=`, encodeCursor('rules', 0), typed('-1'), typed('12')];
    bad.push(
      typed('rules:007:x'),
      typed('rules:1e3:x'),
      typed('rules:1234567890123456:x'),
      // Another list's cursor, and one typed by hand without the check.
      encodeCursor('audit', 12),
      encodeCursor('rulesets', 12),
      typed('rules:12'),
      typed('rules:12:AAAAAAAA'),
      `${encodeCursor('rules', 12)}:x`,
    );
    for (const cursor of bad) {
      expect(() => decodeCursor('rules', cursor), cursor).toThrow(
        expect.objectContaining({
          code: 'VALIDATION_ERROR',
          message: expect.stringMatching(/cursor is malformed: follow the previous page.s Link rel="next" URL/),
        }),
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
    expect(toPage('audit', rows, 2, (row) => row.id)).toEqual({ items: [{ id: 3 }, { id: 5 }], next_cursor: encodeCursor('audit', 5) });
    expect(toPage('audit', rows, 3, (row) => row.id)).toEqual({ items: rows, next_cursor: null });
    expect(toPage('audit', [], 3, (row: { id: number }) => row.id)).toEqual({ items: [], next_cursor: null });
  });
});
