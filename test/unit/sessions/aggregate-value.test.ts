import { describe, expect, it } from 'vitest';
import { aggregateValue } from '../../../src/sessions/aggregate-value.ts';

const state = { count: 4, sum: 10, extreme: 7 };
const empty = { count: 0, sum: 0.000001, extreme: undefined };

describe('aggregateValue', () => {
  it('reads count, sum and avg from the running count and sum', () => {
    expect(aggregateValue({ id: 'a', fn: 'count' }, state)).toBe(4);
    expect(aggregateValue({ id: 'a', fn: 'sum' }, state)).toBe(10);
    expect(aggregateValue({ id: 'a', fn: 'avg' }, state)).toBe(2.5);
  });

  it('reads min and max from the extreme', () => {
    expect(aggregateValue({ id: 'a', fn: 'min' }, state)).toBe(7);
    expect(aggregateValue({ id: 'a', fn: 'max' }, state)).toBe(7);
  });

  it('answers 0 for count and sum of nothing (ignoring float residue) and null for avg, min and max', () => {
    expect(aggregateValue({ id: 'a', fn: 'count' }, empty)).toBe(0);
    expect(aggregateValue({ id: 'a', fn: 'sum' }, empty)).toBe(0);
    expect(aggregateValue({ id: 'a', fn: 'avg' }, empty)).toBeNull();
    expect(aggregateValue({ id: 'a', fn: 'min' }, empty)).toBeNull();
    expect(aggregateValue({ id: 'a', fn: 'max' }, empty)).toBeNull();
  });
});
