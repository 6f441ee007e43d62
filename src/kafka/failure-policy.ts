// The one place that decides whether a failed message is retried or dead-lettered (walks the `cause` chain).
import { AppError, type ErrorCode, isRetryable } from '../errors.ts';

export type FailureDecision = { kind: 'retry'; reason: string } | { kind: 'dead-letter'; code: ErrorCode; detail: string };

/** The first AppError in the cause chain: its code and detail say what was wrong with the input. */
function firstAppError(error: unknown): AppError | undefined {
  const seen = new Set<unknown>();
  let current: unknown = error;
  while (current instanceof Error && !seen.has(current)) {
    if (current instanceof AppError) return current;
    seen.add(current);
    current = current.cause;
  }
  return undefined;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Transient failures (broker, registry, Redis, database) are retried with backoff and never dead-lettered.
 * Input errors dead-letter with their own code. An unexpected error is retried `maxUnexpectedAttempts` times
 * (it may be a hiccup no code describes) and then dead-lettered as INTERNAL_ERROR, so one bad message cannot block a partition.
 */
export function decideFailure(error: unknown, attempt: number, maxUnexpectedAttempts: number): FailureDecision {
  if (isRetryable(error)) return { kind: 'retry', reason: describe(error) };
  const appError = firstAppError(error);
  if (appError !== undefined) return { kind: 'dead-letter', code: appError.code, detail: appError.message };
  if (attempt < maxUnexpectedAttempts) return { kind: 'retry', reason: describe(error) };
  return { kind: 'dead-letter', code: 'INTERNAL_ERROR', detail: `evaluation failed ${attempt} times: ${describe(error)}` };
}

/** Capped exponential backoff with full jitter; `random` is injected so tests can pin it. */
export function backoffMs(attempt: number, options: { initialMs: number; maxMs: number }, random: () => number = Math.random): number {
  const ceiling = Math.min(options.maxMs, options.initialMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}
