// Keeps this instance's rules at the store's revision when other instances change them: a read of the one revision row
// every interval, and a reload when it moved. With Kafka the changelog usually gets there first; this bounds the delay
// without it, and when a changelog message was never published.
import type { RulesRepository } from '../store/types.ts';
import type { RuleCatalog } from './rule-catalog.ts';

export interface RuleRevisionWatchOptions {
  catalog: Pick<RuleCatalog, 'revision' | 'reload'>;
  rules: Pick<RulesRepository, 'revision'>;
  intervalMs: number;
  /** The first failure of a run of them (the database away), not one per interval. */
  onError?: (error: unknown) => void;
  /** The first success after failures. */
  onRecovered?: () => void;
  /**
   * The store's revision is below this instance's (a database restored from a backup under running instances): its
   * rules are not loaded, since revisions only move on here; said once per revision seen.
   */
  onStoreBehind?: (storeRevision: number, ownRevision: number) => void;
}

export interface RuleRevisionWatch {
  /** One check now: reloads when the store is ahead. */
  checkOnce(): Promise<void>;
  /** Stops the timer and waits for a check in progress. */
  stop(): Promise<void>;
}

export function watchRuleRevision(options: RuleRevisionWatchOptions): RuleRevisionWatch {
  let running: Promise<void> | undefined;
  let failing = false;
  let behindAt: number | undefined;
  const checkOnce = (): Promise<void> => {
    running ??= (async () => {
      const revision = await options.rules.revision();
      if (revision > options.catalog.revision) await options.catalog.reload(revision);
      else if (revision < options.catalog.revision && revision !== behindAt) options.onStoreBehind?.(revision, options.catalog.revision);
      behindAt = revision < options.catalog.revision ? revision : undefined;
    })().finally(() => {
      running = undefined;
    });
    return running;
  };
  const timer = setInterval(() => {
    checkOnce().then(
      () => {
        if (failing) options.onRecovered?.();
        failing = false;
      },
      (error: unknown) => {
        if (!failing) options.onError?.(error);
        failing = true;
      },
    );
  }, options.intervalMs);
  // The watch never keeps the process alive on its own.
  timer.unref();
  return {
    checkOnce,
    async stop() {
      clearInterval(timer);
      await running?.catch(() => undefined);
    },
  };
}
