import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { aggregatesJson, firedChange, storableAggregates, storedAggregate } from '../../../src/sessions/fired-change.ts';

describe('fired-set change', () => {
  it('reports rules that started and stopped holding, in the order of each set', () => {
    expect(firedChange([3, 1, 2], [2, 4, 3])).toEqual({ activated: [4], deactivated: [1] });
    expect(firedChange([], [5, 6])).toEqual({ activated: [5, 6], deactivated: [] });
    expect(firedChange([5, 6], [])).toEqual({ activated: [], deactivated: [5, 6] });
  });

  it('reports no change for the same set, in the same or another order', () => {
    expect(firedChange([1, 2, 3], [1, 2, 3])).toEqual({ activated: [], deactivated: [] });
    expect(firedChange([1, 2, 3], [3, 1, 2])).toEqual({ activated: [], deactivated: [] });
  });

  it('agrees with the definition for any two fired sets', () => {
    const ids = fc.uniqueArray(fc.integer({ min: 1, max: 30 }), { maxLength: 20 });
    fc.assert(
      fc.property(ids, ids, (previous, fired) => {
        expect(firedChange(previous, fired)).toEqual({
          activated: fired.filter((rule) => !previous.includes(rule)),
          deactivated: previous.filter((rule) => !fired.includes(rule)),
        });
      }),
    );
  });

  it('hands out a new change each time, so a caller may keep or change it', () => {
    const first = firedChange([1], [1]);
    first.activated.push(9);
    expect(firedChange([1], [1])).toEqual({ activated: [], deactivated: [] });
  });
});

describe('stored aggregates', () => {
  const values = { 'a.count': 3, 'b.sum': 0.1 + 0.2, 'c.avg': null, 'd.sum': Number.POSITIVE_INFINITY, 'e.min': -1e-7 };

  it('keeps numbers, a sum past the double range too, and null; only NaN is stored as null', () => {
    expect(storableAggregates({ ...values, 'f.avg': Number.NaN })).toEqual({ ...values, 'f.avg': null });
  });

  it('writes JSON that reads back to exactly those values, infinities as strings', () => {
    const withBoth = { ...values, 'f.sum': Number.NEGATIVE_INFINITY };
    const json = aggregatesJson(withBoth);
    expect(json).toContain('"d.sum":"Infinity"');
    const read = Object.fromEntries(
      Object.entries(JSON.parse(json) as Record<string, unknown>).map(([id, value]) => [id, storedAggregate(value)]),
    );
    expect(read).toEqual(storableAggregates(withBoth));
    expect(aggregatesJson({ 'a.count': 3, 'c.avg': null })).toBe(JSON.stringify({ 'a.count': 3, 'c.avg': null }));
    expect(aggregatesJson({})).toBe('{}');
    expect(storedAggregate('1')).toBeNull();
  });
});
