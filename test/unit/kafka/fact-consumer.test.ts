import { describe, expect, it } from 'vitest';
import { isRebalanceError, runsOf } from '../../../src/kafka/fact-consumer.ts';
import { transactionalIdFor } from '../../../src/kafka/transactional-output.ts';

describe('runsOf', () => {
  it('splits a batch into ordered runs of at most the given size', () => {
    expect(runsOf([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]);
    expect(runsOf([1, 2], 5)).toEqual([[1, 2]]);
    expect(runsOf([], 5)).toEqual([]);
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
    expect(transactionalIdFor('rules-evaluator', 'rules.facts', 3)).toBe('rules-evaluator.rules.facts.3');
  });
});
