import { describe, expect, it } from 'vitest';
import { AppError } from '../../../src/errors.ts';
import { checkContributions, checkId, checkSpecs, checkTtl, MAX_TTL_SECONDS, sessionFull } from '../../../src/sessions/session-limits.ts';

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
    return undefined;
  } catch (error) {
    return error instanceof AppError ? error.code : 'not an AppError';
  }
}

describe('session input checks', () => {
  it('accepts ids usable inside a hash tag and refuses the rest', () => {
    expect(codeOf(() => checkId('session id', 'user-42:login.v1_a'))).toBeUndefined();
    for (const bad of ['', 'a{b', 'a}b', 'with space', 'ü', 'x'.repeat(201), '.', '..', '...']) {
      expect(
        codeOf(() => checkId('session id', bad)),
        bad,
      ).toBe('VALIDATION_ERROR');
    }
  });

  it('allows a TTL from one second to seven days', () => {
    expect(codeOf(() => checkTtl(1))).toBeUndefined();
    expect(codeOf(() => checkTtl(MAX_TTL_SECONDS))).toBeUndefined();
    for (const bad of [0, -1, 1.5, MAX_TTL_SECONDS + 1, Number.NaN]) expect(codeOf(() => checkTtl(bad))).toBe('VALIDATION_ERROR');
  });

  it('refuses unknown functions and non-integer windows', () => {
    const unknownFn = JSON.parse('[{"id":"a","fn":"median"}]');
    expect(codeOf(() => checkSpecs(unknownFn))).toBe('VALIDATION_ERROR');
    expect(codeOf(() => checkSpecs([{ id: 'a', fn: 'sum', windowMs: 1.5 }]))).toBe('VALIDATION_ERROR');
    expect(checkSpecs([{ id: 'a', fn: 'sum', windowMs: 1000 }]).get('a')?.windowMs).toBe(1000);
  });

  it('refuses NaN contributions', () => {
    const specs = checkSpecs([{ id: 'a', fn: 'sum' }]);
    expect(codeOf(() => checkContributions([{ accumulatorId: 'a', value: Number.NaN }], specs))).toBe('VALIDATION_ERROR');
  });

  it('reports a full session as SESSION_FULL naming the limit', () => {
    const error = sessionFull('s', { maxFacts: 10_000 }, 'facts');
    expect(error.code).toBe('SESSION_FULL');
    expect(error.toBody().detail).toBe("Session 's' already holds the maximum of 10000 facts; retract one first.");
    expect(sessionFull('s', { maxFacts: 10_000, maxBytes: 4_096 }, 'bytes').toBody()).toEqual({
      detail:
        "Session 's' would hold more than 4096 characters of fact JSON (RULES_SESSION_MAX_BYTES); retract facts first, or send a smaller one.",
      error_code: 'SESSION_FULL',
    });
    // A fact larger than the whole allowance: retracting others would not help.
    expect(sessionFull('s', { maxFacts: 10_000, maxBytes: 4_096 }, 'fact').toBody().detail).toBe(
      'The fact is more than the 4096 characters of fact JSON a session may hold (RULES_SESSION_MAX_BYTES); send a smaller one.',
    );
  });
});
