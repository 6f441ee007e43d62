// Bounded retention: executions older than the configured age are deleted by a periodic cleanup.
import type { ExecutionsRepository } from '../store/types.ts';

export interface ExecutionRetentionOptions {
  executions: Pick<ExecutionsRepository, 'deleteOlderThan'>;
  retentionMs: number;
  intervalMs: number;
  onDeleted?: (count: number) => void;
  onError?: (error: unknown) => void;
  now?: () => number;
}

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
  const timer = setInterval(() => {
    runOnce().catch((error: unknown) => options.onError?.(error));
  }, options.intervalMs);
  // The cleanup never keeps the process alive on its own.
  timer.unref();
  return {
    runOnce,
    async stop() {
      clearInterval(timer);
      await running?.catch(() => undefined);
    },
  };
}
