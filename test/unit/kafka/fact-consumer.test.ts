import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isRebalanceError, runsOf } from '../../../src/kafka/fact-consumer.ts';
import { transactionalIdFor } from '../../../src/kafka/transactional-output.ts';

describe('runsOf', () => {
  it('splits a batch into ordered runs of at most the given size', () => {
    expect(runsOf([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]);
    expect(runsOf([1, 2], 5)).toEqual([[1, 2]]);
    expect(runsOf([], 5)).toEqual([]);
  });

  it('ends a run before it would weigh more than allowed, but never leaves one empty', () => {
    const weight = (item: number) => item;
    expect(runsOf([1, 1, 3, 1, 1, 1], 10, weight, 4)).toEqual([
      [1, 1],
      [3, 1],
      [1, 1],
    ]);
    // An item heavier than the whole allowance goes alone.
    expect(runsOf([1, 9, 1], 10, weight, 4)).toEqual([[1], [9], [1]]);
    expect(runsOf([2, 2, 2], 2, weight, 100)).toEqual([[2, 2], [2]]);
  });

  it('keeps every item once and in order, each run within the size and, past its first item, the weight', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 20 })),
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 1, max: 30 }),
        (items, size, max) => {
          const runs = runsOf(items, size, (item) => item, max);
          expect(runs.flat()).toEqual(items);
          for (const run of runs) {
            expect(run.length).toBeGreaterThan(0);
            expect(run.length).toBeLessThanOrEqual(size);
            if (run.length > 1) expect(run.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(max);
          }
        },
      ),
    );
  });
});

describe('isRebalanceError', () => {
  it('recognizes the protocol errors kafkajs answers by rejoining the group', () => {
    expect(isRebalanceError(Object.assign(new Error('x'), { type: 'REBALANCE_IN_PROGRESS' }))).toBe(true);
    expect(isRebalanceError(Object.assign(new Error('x'), { type: 'ILLEGAL_GENERATION' }))).toBe(true);
    expect(isRebalanceError(Object.assign(new Error('x'), { type: 'LEADER_NOT_AVAILABLE' }))).toBe(false);
    expect(isRebalanceError(new Error('x'))).toBe(false);
    expect(isRebalanceError(null)).toBe(false);
  });
});

describe('transactionalIdFor', () => {
  it('is stable per group and input partition so the next owner fences the previous one', () => {
    expect(transactionalIdFor('rules-evaluator', 'rules.facts', 3)).toBe('rules-evaluator:rules.facts:3');
  });

  it('gives different groups, topics and partitions different ids, whatever dots and colons the group holds', () => {
    expect(transactionalIdFor('g.x', 'y.facts', 0)).not.toBe(transactionalIdFor('g', 'x.y.facts', 0));
    const group = fc.string({ unit: fc.constantFrom('a', '.', ':', '-', '1'), maxLength: 6 });
    const topic = fc.string({ unit: fc.constantFrom('a', '.', '_', '-', '1'), minLength: 1, maxLength: 6 });
    const key = fc.tuple(group, topic, fc.integer({ min: 0, max: 12 }));
    fc.assert(
      fc.property(key, key, (a, b) => {
        if (a.join('\u0000') !== b.join('\u0000')) expect(transactionalIdFor(...a)).not.toBe(transactionalIdFor(...b));
      }),
      { numRuns: 2_000 },
    );
  });
});
