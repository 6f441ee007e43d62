import { describe, expect, it } from 'vitest';
import { backlogPauseAt, KAFKA_BACKLOG_PAUSE, runWeightUnder } from '../../../src/kafka/index.ts';

describe('backlogPauseAt', () => {
  it('pauses the consumer at its own bound, or at half of RULES_EXECUTION_BACKLOG_MAX when that is lower, leaving HTTP room', () => {
    expect(backlogPauseAt(1_000_000)).toBe(KAFKA_BACKLOG_PAUSE);
    expect(backlogPauseAt(2 * KAFKA_BACKLOG_PAUSE)).toBe(KAFKA_BACKLOG_PAUSE);
    expect(backlogPauseAt(1_000)).toBe(500);
    expect(backlogPauseAt(1)).toBe(1);
  });
});

describe('runWeightUnder', () => {
  it("keeps every partition's run under way within half the pause point, and lets a run hold at least one message", () => {
    expect(runWeightUnder({ maxPendingExecutions: KAFKA_BACKLOG_PAUSE, partitionsConsumedConcurrently: 3 })).toBe(8_333);
    expect(runWeightUnder({ maxPendingExecutions: 500, partitionsConsumedConcurrently: 3 })).toBe(83);
    expect(3 * runWeightUnder({ maxPendingExecutions: 500, partitionsConsumedConcurrently: 3 })).toBeLessThanOrEqual(250);
    expect(runWeightUnder({ maxPendingExecutions: 1, partitionsConsumedConcurrently: 3 })).toBe(1);
  });
});
