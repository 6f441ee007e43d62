import { describe, expect, it } from 'vitest';
import { AppError } from '../../../src/errors.ts';
import { eventTimeOf } from '../../../src/evaluation/event-time.ts';

function refusal(event: unknown, field = 'timestamp'): AppError {
  try {
    eventTimeOf(event, field);
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
  throw new Error(`expected ${JSON.stringify(event)} to be refused`);
}

describe('eventTimeOf', () => {
  it('reads ISO 8601 timestamps with a zone, in any offset', () => {
    expect(eventTimeOf({ timestamp: '2024-05-01T12:00:00Z' }, 'timestamp')).toBe(Date.UTC(2024, 4, 1, 12));
    expect(eventTimeOf({ timestamp: '2024-05-01T14:00:00.250+02:00' }, 'timestamp')).toBe(Date.UTC(2024, 4, 1, 12, 0, 0, 250));
    expect(eventTimeOf({ timestamp: '2024-05-01t12:00z' }, 'timestamp')).toBe(Date.UTC(2024, 4, 1, 12));
    expect(eventTimeOf({ timestamp: '2024-05-01 12:00:00-0130' }, 'timestamp')).toBe(Date.UTC(2024, 4, 1, 13, 30));
    expect(eventTimeOf({ timestamp: '2024-05-01' }, 'timestamp')).toBe(Date.UTC(2024, 4, 1));
  });

  it('knows the calendar: leap days only in leap years, no 31st in a 30-day month', () => {
    expect(eventTimeOf({ timestamp: '2024-02-29T00:00:00Z' }, 'timestamp')).toBe(Date.UTC(2024, 1, 29));
    expect(eventTimeOf({ timestamp: '2000-02-29' }, 'timestamp')).toBe(Date.UTC(2000, 1, 29));
    expect(eventTimeOf({ timestamp: '2024-12-31T23:59:59Z' }, 'timestamp')).toBe(Date.UTC(2024, 11, 31, 23, 59, 59));
    for (const value of ['2023-02-29', '1900-02-29T00:00:00Z', '2024-04-31', '2024-00-10', '2024-06-00']) {
      expect(refusal({ timestamp: value }).code, value).toBe('VALIDATION_ERROR');
    }
  });

  it('reads epoch milliseconds', () => {
    expect(eventTimeOf({ timestamp: 1_714_564_800_000 }, 'timestamp')).toBe(1_714_564_800_000);
    expect(eventTimeOf({ timestamp: 0 }, 'timestamp')).toBe(0);
  });

  it('reads the configured field, a dotted path included', () => {
    expect(eventTimeOf({ meta: { at: 5 }, timestamp: 9 }, 'meta.at')).toBe(5);
    expect(eventTimeOf({ occurred_at: '2024-05-01T00:00:00Z' }, 'occurred_at')).toBe(Date.UTC(2024, 4, 1));
  });

  it('takes the arrival time when the field is missing or null', () => {
    expect(eventTimeOf({}, 'timestamp')).toBeUndefined();
    expect(eventTimeOf({ timestamp: null }, 'timestamp')).toBeUndefined();
    expect(eventTimeOf({ other: 1 }, 'meta.at')).toBeUndefined();
  });

  it('refuses anything else with VALIDATION_ERROR naming the field and the value', () => {
    const bad: unknown[] = [
      'yesterday',
      'May 1, 2024',
      '2024-05-01T12:00:00',
      '2024-02-30',
      '2024-13-01',
      '2024-05-01T25:00:00Z',
      '1714564800000',
      true,
      [1],
      { at: 1 },
      9e15,
    ];
    for (const value of bad) {
      const error = refusal({ timestamp: value });
      expect(error.code, JSON.stringify(value)).toBe('VALIDATION_ERROR');
      expect(error.message).toContain('event.timestamp must be an ISO 8601 timestamp with a zone');
      expect(error.message).toContain(`got ${JSON.stringify(value)}`);
    }
    expect(refusal({ meta: { at: 'soon' } }, 'meta.at').message).toContain('event.meta.at must be');
  });
});
