import { describe, expect, it } from 'vitest';
import { backlogPauseAt, KAFKA_BACKLOG_PAUSE } from '../../../src/kafka/index.ts';

describe('backlogPauseAt', () => {
  it('pauses the consumer at its own bound, or at RULES_EXECUTION_BACKLOG_MAX when the operator set it lower', () => {
    expect(backlogPauseAt(1_000_000)).toBe(KAFKA_BACKLOG_PAUSE);
    expect(backlogPauseAt(1_000)).toBe(1_000);
  });
});
