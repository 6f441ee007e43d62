import { describe, expect, it } from 'vitest';
import { backlogPauseAt, KAFKA_BACKLOG_PAUSE, runSizeUnder } from '../../../src/kafka/index.ts';

describe('backlogPauseAt', () => {
  it('pauses the consumer at its own bound, or at half of RULES_EXECUTION_BACKLOG_MAX when that is lower, leaving HTTP room', () => {
    expect(backlogPauseAt(1_000_000)).toBe(KAFKA_BACKLOG_PAUSE);
    expect(backlogPauseAt(2 * KAFKA_BACKLOG_PAUSE)).toBe(KAFKA_BACKLOG_PAUSE);
    expect(backlogPauseAt(1_000)).toBe(500);
    expect(backlogPauseAt(1)).toBe(1);
  });
});

describe('runSizeUnder', () => {
  it('keeps every partition run under way within half the pause point, and at least one message', () => {
    const tuning = { maxRunSize: 1_000, partitionsConsumedConcurrently: 3 };
    expect(runSizeUnder({ ...tuning, maxPendingExecutions: KAFKA_BACKLOG_PAUSE })).toBe(1_000);
    expect(runSizeUnder({ ...tuning, maxPendingExecutions: 500 })).toBe(83);
    expect(3 * runSizeUnder({ ...tuning, maxPendingExecutions: 500 })).toBeLessThanOrEqual(250);
    expect(runSizeUnder({ ...tuning, maxPendingExecutions: 1 })).toBe(1);
  });
});
