// Redis failures become AppError at the store edge: connection trouble is UNAVAILABLE (retryable), the rest INTERNAL_ERROR.
import { AppError, describeError } from '../errors.ts';

// Server replies that mean "busy, failing over, refusing writes or connections for now", not "your command is wrong":
// they pass once the server (or its operator) recovers, so the Kafka side retries them instead of dead-lettering.
const TRANSIENT_REPLY =
  /^(LOADING|BUSY|MASTERDOWN|READONLY|TRYAGAIN|CLUSTERDOWN|OOM|NOREPLICAS|MISCONF|NOAUTH|WRONGPASS|NOPERM)\b|^ERR max number of clients reached/;

/** What a session call answers while Redis cannot serve it. */
export const SESSION_STORE_UNAVAILABLE = 'Session store (Redis) is unavailable; try again later.';

export function toSessionStoreError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  const name = error instanceof Error ? error.name : '';
  const message = error instanceof Error ? error.message : String(error);
  if (name === 'ReplyError' && !TRANSIENT_REPLY.test(message)) {
    return new AppError('INTERNAL_ERROR', 'Session store command failed.', { cause: error });
  }
  return new AppError('UNAVAILABLE', SESSION_STORE_UNAVAILABLE, { cause: error });
}

/**
 * A Redis connection error in a line for the log, without REDIS_URL's password: a server that knows no AUTH (renamed
 * away, or a proxy) answers "unknown command 'auth', with args beginning with: 'user' 'password'".
 */
export function describeRedisError(error: Error, redisUrl: string): string {
  // The server quotes a refused command's first arguments (cut at about 128 characters, so a long password in part).
  let text = describeError(error).replace(/(with args beginning with:).*$/s, '$1 [redacted]');
  const passwords: string[] = [];
  try {
    const url = new URL(redisUrl);
    passwords.push(decodeURIComponent(url.password), ...url.searchParams.getAll('password'));
  } catch {
    return text;
  }
  for (const password of passwords) if (password !== '') text = text.replaceAll(password, '[redacted]');
  return text;
}
