// When a wait that recurs is worth a log line: a consumer held at the execution store's bound waits and resumes several
// times a second, and a pair of lines for each would bury everything else in the log.

/** How long after a logged wait the next waits stay quiet, unless one of them lasts that long itself. */
export const QUIET_MS = 60_000;

/**
 * Tracks one kind of wait. The first wait is logged, and so is the first after QUIET_MS without one logged; a quiet
 * wait that lasts QUIET_MS is logged then. A logged wait's end is logged too, so starts and ends always pair.
 */
export class RecurringWait {
  readonly #quietMs: number;
  readonly #now: () => number;
  #lastLoggedAt = Number.NEGATIVE_INFINITY;
  #waiting = false;
  #startedAt = 0;
  #logged = false;
  /** Waits since the last logged one that were not logged themselves. */
  #unlogged = 0;

  /** `now` is monotonic milliseconds: a wall clock set back would keep waits quiet for as long. */
  constructor(quietMs = QUIET_MS, now: () => number = () => performance.now()) {
    this.#quietMs = quietMs;
    this.#now = now;
  }

  /** A wait begins: undefined to stay quiet, else log it now, saying how many waits went unlogged since the last line. */
  begin(): number | undefined {
    const now = this.#now();
    this.#waiting = true;
    this.#startedAt = now;
    this.#logged = now - this.#lastLoggedAt >= this.#quietMs;
    if (!this.#logged) {
      this.#unlogged += 1;
      return undefined;
    }
    return this.#log(now);
  }

  /** Called while the wait goes on: as begin(), once a quiet wait has lasted QUIET_MS; nothing once it ended. */
  stillWaiting(): number | undefined {
    const now = this.#now();
    if (!this.#waiting || this.#logged || now - this.#startedAt < this.#quietMs) return undefined;
    this.#logged = true;
    // This wait is told now: it no longer counts among those that went unlogged.
    this.#unlogged -= 1;
    return this.#log(now);
  }

  /** The wait ends: whether to log that, which is when its beginning was logged (false when none is under way). */
  end(): boolean {
    const logged = this.#waiting && this.#logged;
    this.#waiting = false;
    this.#logged = false;
    return logged;
  }

  #log(now: number): number {
    this.#lastLoggedAt = now;
    const unlogged = this.#unlogged;
    this.#unlogged = 0;
    return unlogged;
  }
}
