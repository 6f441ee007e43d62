import { describe, expect, it } from 'vitest';
import { isRetryable } from '../../../src/errors.ts';
import { isTransientDatabaseError, isUniqueViolation, isUnstorableTextError, withDatabase } from '../../../src/store/database-errors.ts';

const sqlError = (code: string, extra: Record<string, unknown> = {}) => Object.assign(new Error(`sqlstate ${code}`), { code, ...extra });

describe('database error classification', () => {
  it('recognizes a unique violation, optionally of one constraint, through causes', () => {
    const violation = sqlError('23505', { constraint: 'rules_domain_name_key' });
    expect(isUniqueViolation(violation)).toBe(true);
    expect(isUniqueViolation(violation, 'rules_domain_name_key')).toBe(true);
    expect(isUniqueViolation(violation, 'rulesets_name_key')).toBe(false);
    expect(isUniqueViolation(new Error('wrapped', { cause: violation }), 'rules_domain_name_key')).toBe(true);
    expect(isUniqueViolation(sqlError('23503'))).toBe(false);
  });

  it('treats connection loss, resource shortage, shutdown, lock conflicts and a table gone as transient', () => {
    for (const code of ['ECONNREFUSED', 'ECONNRESET', '08006', '08001', '53300', '57P01', '57P03', '40001', '40P01', '42P01']) {
      expect(isTransientDatabaseError(sqlError(code)), code).toBe(true);
    }
    expect(isTransientDatabaseError(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isTransientDatabaseError(new AggregateError([sqlError('ECONNREFUSED')], 'connect failed'))).toBe(true);
    for (const code of ['23505', '22P05', '42601', '42703']) expect(isTransientDatabaseError(sqlError(code)), code).toBe(false);
  });

  it('turns an outage into a retryable UNAVAILABLE and lets every other error through unchanged', async () => {
    const outage = sqlError('ECONNREFUSED');
    const wrapped = await withDatabase(() => Promise.reject(outage)).catch((error: unknown) => error);
    expect(wrapped).toMatchObject({ code: 'UNAVAILABLE', message: 'the database is unavailable', cause: outage });
    expect(isRetryable(wrapped)).toBe(true);
    const syntax = sqlError('42601');
    await expect(withDatabase(() => Promise.reject(syntax))).rejects.toBe(syntax);
    await expect(withDatabase(async () => 5)).resolves.toBe(5);
  });

  it('turns text the database refused (U+0000, a lone surrogate) into VALIDATION_ERROR, not a 500', async () => {
    for (const code of ['22021', '22P05']) {
      const refused = sqlError(code);
      expect(isUnstorableTextError(new Error('wrapped', { cause: refused })), code).toBe(true);
      const wrapped = await withDatabase(() => Promise.reject(refused)).catch((error: unknown) => error);
      expect(wrapped).toMatchObject({ code: 'VALIDATION_ERROR', status: 400, cause: refused });
      expect((wrapped as Error).message).toMatch(/U\+0000/);
    }
    expect(isUnstorableTextError(sqlError('22P02'))).toBe(false);
  });
});
