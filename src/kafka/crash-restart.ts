// kafkajs restarts a crashed consumer only after a retriable error. A non-retriable one (no group coordinator found
// while the broker restarts, a TypeError thrown in a handler) leaves it stopped for good: this starts it again.
import type { Consumer } from 'kafkajs';
import type { Logger } from 'pino';
import { backoffMs } from './failure-policy.ts';

export interface CrashRestartOptions {
  /** Named in the log: "facts consumer", "rule changelog consumer". */
  name: string;
  logger: Logger;
  backoff: { initialMs: number; maxMs: number };
  /** Connects, subscribes and runs the consumer, as at start-up. */
  start: () => Promise<void>;
}

export interface CrashRestart {
  /** No more restarts; resolves once a restart under way has settled, so a disconnect after it is the last word. */
  stop(): Promise<void>;
}

/** Restarts `consumer` with capped back-off after every crash kafkajs will not restart itself, until stopped. */
export function restartAfterCrashes(consumer: Consumer, options: CrashRestartOptions): CrashRestart {
  let attempt = 0;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let restarting: Promise<void> | undefined;
  const schedule = () => {
    if (stopped) return;
    attempt += 1;
    const delay = backoffMs(attempt, options.backoff);
    options.logger.warn({ attempt, delay_ms: delay }, `restarting the ${options.name}, which kafkajs leaves stopped after this crash`);
    clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      if (stopped) return;
      restarting = options
        .start()
        .catch((error: unknown) => {
          options.logger.warn({ err: error, attempt }, `restarting the ${options.name} failed`);
          schedule();
        })
        .finally(() => {
          restarting = undefined;
        });
    }, delay);
  };
  consumer.on(consumer.events.CRASH, (event) => {
    if (!event.payload.restart) schedule();
  });
  consumer.on(consumer.events.GROUP_JOIN, () => {
    attempt = 0;
  });
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await restarting;
    },
  };
}
