import { describe, expect, it } from 'vitest';
import { AppError } from '../../../src/errors.ts';
import { backoffMs, decideFailure } from '../../../src/kafka/failure-policy.ts';

describe('decideFailure', () => {
  it('dead-letters an input error with its own code and detail', () => {
    expect(decideFailure(new AppError('VALIDATION_ERROR', 'value is not valid JSON: x'), 1, 3)).toEqual({
      kind: 'dead-letter',
      code: 'VALIDATION_ERROR',
      detail: 'value is not valid JSON: x',
    });
  });

  it('retries a retryable error however many times it has failed', () => {
    expect(decideFailure(new AppError('UNAVAILABLE', 'the database is unavailable'), 50, 3)).toEqual({
      kind: 'retry',
      reason: 'the database is unavailable',
    });
  });

  it('finds a retryable error down the cause chain', () => {
    const broker = Object.assign(new Error('broker not available'), { retriable: true });
    const wrapped = new Error('produce failed', { cause: new Error('request failed', { cause: broker }) });
    expect(decideFailure(wrapped, 9, 3).kind).toBe('retry');
  });

  it('finds an input error down the cause chain', () => {
    const wrapped = new Error('evaluate failed', { cause: new AppError('DSL_ERROR', 'bad rule') });
    expect(decideFailure(wrapped, 1, 3)).toEqual({ kind: 'dead-letter', code: 'DSL_ERROR', detail: 'bad rule' });
  });

  it('retries an unexpected error a bounded number of times, then dead-letters it as INTERNAL_ERROR', () => {
    const error = new TypeError('x is undefined');
    expect(decideFailure(error, 1, 3).kind).toBe('retry');
    expect(decideFailure(error, 2, 3).kind).toBe('retry');
    expect(decideFailure(error, 3, 3)).toEqual({
      kind: 'dead-letter',
      code: 'INTERNAL_ERROR',
      detail: 'evaluation failed 3 times: x is undefined',
    });
  });

  it('handles a thrown non-Error value', () => {
    expect(decideFailure('boom', 1, 1)).toEqual({ kind: 'dead-letter', code: 'INTERNAL_ERROR', detail: 'evaluation failed 1 times: boom' });
  });

  it('does not loop on a cyclic cause chain', () => {
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    (a as { cause?: unknown }).cause = b;
    expect(decideFailure(a, 1, 2).kind).toBe('retry');
  });
});

describe('backoffMs', () => {
  const options = { initialMs: 100, maxMs: 2_000 };

  it('doubles the ceiling per attempt and keeps the delay between half and all of it', () => {
    expect(backoffMs(1, options, () => 0)).toBe(50);
    expect(backoffMs(1, options, () => 1)).toBe(100);
    expect(backoffMs(3, options, () => 1)).toBe(400);
    expect(backoffMs(3, options, () => 0)).toBe(200);
  });

  it('never exceeds the cap', () => {
    expect(backoffMs(40, options, () => 1)).toBe(2_000);
  });
});
