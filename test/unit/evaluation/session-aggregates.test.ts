import { describe, expect, it } from 'vitest';
import { valueAsOfWrite, valuesAsOfWrite } from '../../../src/evaluation/session-aggregates.ts';

describe('aggregate values as of the latest write', () => {
  it('takes the stored value, a stored null included', () => {
    expect(valueAsOfWrite({ id: 'a', fn: 'count' }, { a: 3 })).toBe(3);
    expect(valueAsOfWrite({ id: 'a', fn: 'sum' }, { a: null })).toBeNull();
    expect(valueAsOfWrite({ id: 'a', fn: 'avg' }, { a: 12.5 })).toBe(12.5);
  });

  it('gives a node nothing was stored for its empty value: 0 for count and sum, null for avg, min and max', () => {
    const empty = (fn: 'count' | 'sum' | 'avg' | 'min' | 'max') => valueAsOfWrite({ id: 'new', fn }, { other: 5 });
    expect([empty('count'), empty('sum'), empty('avg'), empty('min'), empty('max')]).toEqual([0, 0, null, null, null]);
  });

  it('never reads an inherited property as a stored value', () => {
    expect(valueAsOfWrite({ id: 'toString', fn: 'count' }, {})).toBe(0);
    expect(valueAsOfWrite({ id: '__proto__', fn: 'max' }, {})).toBeNull();
  });

  it('maps every accumulator by id, whether stored or not, and ignores stored values of others', () => {
    const accumulators = [
      { id: 'r1:root.0:aa', fn: 'count' as const },
      { id: 'r1:root.1:bb', fn: 'min' as const },
    ];
    expect(valuesAsOfWrite(accumulators, { 'r1:root.0:aa': 2, 'r9:root:cc': 7 })).toEqual({ 'r1:root.0:aa': 2, 'r1:root.1:bb': null });
    expect(valuesAsOfWrite([], { a: 1 })).toEqual({});
  });
});
