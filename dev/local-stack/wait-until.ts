// Polls a readiness probe until it answers, the process it waits for dies, or the deadline passes.
import { setTimeout as sleep } from 'node:timers/promises';

export interface WaitOptions {
  readonly timeoutMs: number;
  readonly intervalMs?: number;
  /** Resolves when the awaited process has exited: waiting longer is pointless then. */
  readonly exited?: Promise<unknown>;
}

export type WaitOutcome =
  | { readonly ok: true }
  | { readonly ok: false; readonly reason: 'timeout' | 'exited'; readonly lastError: unknown };

/** The probe returns normally when ready and throws (or returns false) when not yet. */
export async function waitUntil(probe: () => Promise<boolean | undefined>, options: WaitOptions): Promise<WaitOutcome> {
  const deadline = Date.now() + options.timeoutMs;
  let exited = false;
  options.exited?.then(
    () => (exited = true),
    () => (exited = true),
  );
  let lastError: unknown;
  while (true) {
    if (exited) return { ok: false, reason: 'exited', lastError };
    try {
      if ((await probe()) !== false) return { ok: true };
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) return { ok: false, reason: exited ? 'exited' : 'timeout', lastError };
    await sleep(options.intervalMs ?? 100);
  }
}

export function describeError(error: unknown): string {
  if (error instanceof Error) return error.message;
  return error === undefined ? 'no answer' : String(error);
}
