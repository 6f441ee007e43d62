// Recognizes database errors by SQLSTATE (pg and PGlite both expose it as `code`) and turns outages into UNAVAILABLE.
import { UNSTORABLE_TEXT } from '../contracts/storable-text.ts';
import { AppError } from '../errors.ts';

/** Code of the error a pool connection that could not be opened fails with, whatever the server answered. */
export const CONNECT_FAILED = 'DATABASE_CONNECT_FAILED';

// Node's connection errors, a connection that could not be opened, and embedded PGlite's thread gone (503 until a
// restart; readiness reports the database down).
const TRANSIENT_NODE_CODES = new Set([
  CONNECT_FAILED,
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'PGLITE_THREAD_STOPPED',
]);
// 40001 serialization failure, 40P01 deadlock, 55P03 lock not available (lock_timeout), 57014 canceled (by an
// operator or a server-side timeout), 25P03 idle in transaction too long: trying again can succeed. 42P01 undefined
// table: the database was emptied or made again under the running service (a restart migrates it again).
const TRANSIENT_SQLSTATES = new Set(['40001', '40P01', '55P03', '57014', '25P03', '42P01']);
// 22021 character not in repertoire (U+0000 in text), 22P05 untranslatable character (U+0000 or a lone surrogate in jsonb).
const UNSTORABLE_TEXT_SQLSTATES = new Set(['22021', '22P05']);
// pg's query_timeout: the server stopped answering on an open connection, which still waits for that answer.
const QUERY_TIMEOUT = /query read timeout/i;
// pg reports a dropped connection or a pool time-out without a code.
const TRANSIENT_MESSAGES = [
  /connection terminated/i,
  /timeout exceeded when trying to connect/i,
  /client has encountered a connection error/i,
  QUERY_TIMEOUT,
];

/** True when a query gave up waiting on its connection (pg's query_timeout): that connection must not be reused. */
export function isQueryTimeout(error: unknown): boolean {
  return error instanceof Error && QUERY_TIMEOUT.test(error.message);
}

/** True when the error (or a cause) is a unique violation, optionally of the named constraint. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  return someLink(error, (link) => link.code === '23505' && (constraint === undefined || link.constraint === constraint));
}

/** True when the error (or a cause) means the database is unreachable or busy, not that the request is wrong. */
export function isTransientDatabaseError(error: unknown): boolean {
  return someLink(error, (link) => {
    const code = typeof link.code === 'string' ? link.code : '';
    if (TRANSIENT_NODE_CODES.has(code) || TRANSIENT_SQLSTATES.has(code)) return true;
    // Class 08 connection exception, 53 insufficient resources, 57P operator intervention (shutdown, cannot connect now).
    if (/^(08|53)...$/.test(code) || code.startsWith('57P')) return true;
    return typeof link.message === 'string' && TRANSIENT_MESSAGES.some((pattern) => pattern.test(link.message as string));
  });
}

/** True when the database refused text in the request: the schemas refuse it first, this is the net behind them. */
export function isUnstorableTextError(error: unknown): boolean {
  return someLink(error, (link) => typeof link.code === 'string' && UNSTORABLE_TEXT_SQLSTATES.has(link.code));
}

/**
 * Runs a database call, rethrowing an outage as AppError UNAVAILABLE (retryable) and text the database cannot hold as
 * VALIDATION_ERROR, each with the original as cause.
 */
export async function withDatabase<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof AppError) throw error;
    if (isTransientDatabaseError(error)) throw new AppError('UNAVAILABLE', 'the database is unavailable', { cause: error });
    if (isUnstorableTextError(error)) {
      throw new AppError('VALIDATION_ERROR', `The request holds text the database cannot store: text ${UNSTORABLE_TEXT}.`, {
        cause: error,
      });
    }
    throw error;
  }
}

interface ErrorLink {
  code?: unknown;
  constraint?: unknown;
  message?: unknown;
}

function someLink(error: unknown, test: (link: ErrorLink) => boolean): boolean {
  const seen = new Set<unknown>();
  let current: unknown = error;
  while (current !== null && typeof current === 'object' && !seen.has(current)) {
    seen.add(current);
    const link = current as ErrorLink & { cause?: unknown; errors?: unknown };
    if (test(link)) return true;
    // An AggregateError from a failed connect carries the per-address errors.
    if (Array.isArray(link.errors) && link.errors.some((inner) => someLink(inner, test))) return true;
    current = link.cause;
  }
  return false;
}
