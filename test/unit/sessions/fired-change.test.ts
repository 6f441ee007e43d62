import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { aggregatesJson, firedChange, storableAggregates } from '../../../src/sessions/fired-change.ts';

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

  it('keeps finite numbers and null, and stores a sum past the double range as null', () => {
    expect(storableAggregates(values)).toEqual({ 'a.count': 3, 'b.sum': 0.1 + 0.2, 'c.avg': null, 'd.sum': null, 'e.min': -1e-7 });
  });

  it('writes the same as JSON that reads back to exactly those values', () => {
    expect(JSON.parse(aggregatesJson(values))).toEqual(storableAggregates(values));
    expect(aggregatesJson(values)).toBe(JSON.stringify(storableAggregates(values)));
    expect(aggregatesJson({})).toBe('{}');
  });
});
