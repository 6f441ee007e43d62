import { describe, expect, it } from 'vitest';
import { AppError, describeError } from '../../src/errors.ts';

describe('describeError', () => {
  it('says what an error without a message held: the refusals inside an AggregateError, else its code', () => {
    const refused = Object.assign(
      new AggregateError([new Error('connect ECONNREFUSED ::1:6999'), new Error('connect ECONNREFUSED 127.0.0.1:6999')], ''),
      { code: 'ECONNREFUSED' },
    );
    expect(describeError(refused)).toBe('AggregateError: connect ECONNREFUSED ::1:6999; connect ECONNREFUSED 127.0.0.1:6999');
    expect(describeError(Object.assign(new Error(''), { code: 'ECONNRESET' }))).toBe('ECONNRESET');
  });

  it("names the error's type unless it is a plain Error", () => {
    expect(describeError(new TypeError("Cannot read properties of undefined (reading 'x')"))).toBe(
      "TypeError: Cannot read properties of undefined (reading 'x')",
    );
    expect(describeError(new Error('the database is unavailable'))).toBe('the database is unavailable');
    // Ours says what went wrong already; its class name would tell an operator nothing.
    expect(describeError(new AppError('UNAVAILABLE', 'the database is unavailable'))).toBe('the database is unavailable');
    expect(describeError(Object.assign(new Error('database "x" does not exist'), { name: 'error' }))).toBe('database "x" does not exist');
  });
});
