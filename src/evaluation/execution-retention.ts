// Bounded retention: executions older than the configured age are deleted by a periodic cleanup.
import type { ExecutionsRepository } from '../store/types.ts';

export interface ExecutionRetentionOptions {
  executions: Pick<ExecutionsRepository, 'deleteOlderThan'>;
  retentionMs: number;
  intervalMs: number;
  onDeleted?: (count: number) => void;
  onError?: (error: unknown) => void;
  now?: () => number;
  /** Delay before the first cleanup; default a random moment within FIRST_RUN_WITHIN_MS (or the interval, if shorter). */
  firstRunMs?: number;
}

/**
 * The first cleanup runs this soon after start, not an interval later: a service restarted more often than the interval
 * (deploys, autoscaling) would otherwise never delete anything. Random, so replicas started together do not all delete
 * at once.
 */
export const FIRST_RUN_WITHIN_MS = 60_000;

export interface ExecutionRetention {
  /** One cleanup now; resolves with the number of executions deleted. */
  runOnce(): Promise<number>;
  /** Stops the timer and waits for a cleanup in progress. */
  stop(): Promise<void>;
}

export function startExecutionRetention(options: ExecutionRetentionOptions): ExecutionRetention {
  const now = options.now ?? Date.now;
  let running: Promise<number> | undefined;
  const runOnce = (): Promise<number> => {
    running ??= options.executions
      .deleteOlderThan(new Date(now() - options.retentionMs))
      .then((count) => {
        options.onDeleted?.(count);
        return count;
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  };
  const run = () => {
    runOnce().catch((error: unknown) => options.onError?.(error));
  };
  const firstRunMs = options.firstRunMs ?? Math.floor(Math.random() * Math.min(FIRST_RUN_WITHIN_MS, options.intervalMs));
  const first = setTimeout(run, firstRunMs);
  const timer = setInterval(run, options.intervalMs);
  // The cleanup never keeps the process alive on its own.
  first.unref();
  timer.unref();
  return {
    runOnce,
    async stop() {
      clearTimeout(first);
      clearInterval(timer);
      await running?.catch(() => undefined);
    },
  };
}
