// Keeps one of process.nextTick's queue entries alive, so V8 never compiles nextTick with megamorphic property stores.
import { createHook } from 'node:async_hooks';

let kept: object | undefined;

/**
 * Holds one entry of process.nextTick's queue for the life of the process; returns whether one is held.
 *
 * nextTick builds each entry with an object literal of computed keys, and V8 holds the hidden classes that literal
 * moves through only weakly. A full collection while no entry is queued frees them, the next entry gets new ones, and
 * after two such collections (start-up has several) the literal's stores turn megamorphic for good: every nextTick
 * then costs 0.4-0.9 µs instead of 0.05-0.08, and Node's streams call it about five times per HTTP request. This
 * happened in about half of the service's starts (docs/benchmarks.md). A held entry keeps its hidden classes alive.
 */
export function keepTickShape(): boolean {
  if (kept !== undefined) return true;
  // The only public way to reach an entry: an init hook sees each one as it is queued. Enabled for one call.
  const hook = createHook({
    init(_asyncId, type, _triggerAsyncId, resource) {
      if (type === 'TickObject') kept ??= resource;
    },
  });
  hook.enable();
  try {
    process.nextTick(noop);
  } finally {
    hook.disable();
  }
  return kept !== undefined;
}

function noop(): void {}
