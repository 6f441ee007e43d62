import { describe, expect, it } from 'vitest';
import { AppError, isRetryable } from '../../../src/errors.ts';
import { describeRedisError, toSessionStoreError } from '../../../src/sessions/redis-errors.ts';

function replyError(message: string): Error {
  const error = new Error(message);
  error.name = 'ReplyError';
  return error;
}

describe('toSessionStoreError', () => {
  it('maps connection failures to retryable UNAVAILABLE and keeps the cause', () => {
    const cause = new Error("Stream isn't writeable and enableOfflineQueue options is false");
    const error = toSessionStoreError(cause);
    expect(error.code).toBe('UNAVAILABLE');
    expect(error.cause).toBe(cause);
    expect(isRetryable(error)).toBe(true);
  });

  it('maps busy or failing-over server replies to UNAVAILABLE', () => {
    const replies = ['LOADING Redis is loading', 'BUSY script running', 'READONLY replica', 'OOM command not allowed', 'TRYAGAIN'];
    // Refusals an operator clears (a full disk, the client limit, credentials or ACLs): retried, never dead-lettered.
    replies.push(
      'MISCONF Redis is configured to save RDB snapshots',
      'ERR max number of clients reached',
      'NOAUTH Authentication required.',
    );
    replies.push('WRONGPASS invalid username-password pair', "NOPERM this user has no permissions to run the 'evalsha' command");
    for (const message of replies) {
      expect(toSessionStoreError(replyError(message)).code).toBe('UNAVAILABLE');
    }
  });

  it('maps other server replies (a script bug) to INTERNAL_ERROR without leaking the reply', () => {
    const error = toSessionStoreError(replyError('ERR user_script:1: attempt to index a nil value'));
    expect(error.code).toBe('INTERNAL_ERROR');
    expect(error.message).not.toContain('user_script');
    expect(isRetryable(error)).toBe(false);
  });

  it('passes an AppError through unchanged', () => {
    const original = new AppError('CONFLICT', 'full');
    expect(toSessionStoreError(original)).toBe(original);
  });

  it('wraps a thrown non-error value', () => {
    expect(toSessionStoreError('socket closed').code).toBe('UNAVAILABLE');
  });
});

describe('describeRedisError', () => {
  const refused = replyError("ERR unknown command 'auth', with args beginning with: 'app' 'p@ss/word' ");

  it("leaves REDIS_URL's password out, as the URL encodes it or not", () => {
    expect(describeRedisError(new Error('WRONGPASS p@ss/word'), 'redis://app:p%40ss%2Fword@cache:6379')).toBe('WRONGPASS [redacted]');
    expect(describeRedisError(refused, 'redis://app:p%40ss%2Fword@cache:6379')).not.toContain('p@ss');
  });

  it('leaves out the quoted arguments whole: a password in the query, or one the server cut short', () => {
    const long = 'x'.repeat(150);
    const cut = replyError(`ERR unknown command 'auth', with args beginning with: '${long.slice(0, 117)}' `);
    expect(describeRedisError(cut, `redis://app:${long}@cache:6379`)).toBe(
      "ReplyError: ERR unknown command 'auth', with args beginning with: [redacted]",
    );
    const queried = replyError("ERR unknown command 'auth', with args beginning with: 'hunter2-secret' ");
    expect(describeRedisError(queried, 'redis://cache:6379/0?password=hunter2-secret')).not.toContain('hunter2');
    expect(describeRedisError(new Error('ECONNRESET hunter2-secret'), 'redis://cache:6379/0?password=hunter2-secret')).toBe(
      'ECONNRESET [redacted]',
    );
  });

  it('says the rest as it is: no password, or one the message does not hold', () => {
    expect(describeRedisError(new Error('connect ECONNREFUSED 127.0.0.1:6379'), 'redis://cache:6379')).toBe(
      'connect ECONNREFUSED 127.0.0.1:6379',
    );
    expect(describeRedisError(new Error('ERR p@ss/word'), 'redis://:other@cache:6379')).toBe('ERR p@ss/word');
  });
});
