// Long synchronous runs (a bulk request, a Kafka batch) give other requests, heartbeats and health checks a turn.
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';

/** Longest a run holds the event loop between turns, whatever its items cost (rules with costly regexes). */
export const MAX_TURN_MS = 10;

/** A turn every `every` items, or sooner once the run has held the event loop for MAX_TURN_MS. */
export class EventLoopTurns {
  readonly #every: number;
  #started = performance.now();

  constructor(every: number) {
    this.#every = every;
  }

  /** Whether item `index` waits for a turn first (`await take()`). */
  due(index: number): boolean {
    return index > 0 && (index % this.#every === 0 || performance.now() - this.#started > MAX_TURN_MS);
  }

  async take(): Promise<void> {
    await yieldToEventLoop();
    this.#started = performance.now();
  }
}
