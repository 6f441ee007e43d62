// How often each session was written lately: the Redis store's cache admits a copy by it when full (TinyLFU's idea).

/** Writes between two halvings of every count, by default: the counts follow what is written lately, in bounded memory. */
const FREQUENCY_PERIOD = 10_000;

export class WriteFrequency {
  readonly #period: number;
  readonly #counts = new Map<string, number>();
  #sinceHalving = 0;

  constructor(period: number = FREQUENCY_PERIOD) {
    this.#period = period;
  }

  /** Sessions counted now; at most twice the period, since the counts add up to less than that. */
  get size(): number {
    return this.#counts.size;
  }

  /** Counts a write; every `period` writes each count is halved and those that reach zero are forgotten. */
  count(id: string): void {
    this.#counts.set(id, (this.#counts.get(id) ?? 0) + 1);
    this.#sinceHalving += 1;
    if (this.#sinceHalving < this.#period) return;
    this.#sinceHalving = 0;
    for (const [counted, count] of this.#counts) {
      if (count < 2) this.#counts.delete(counted);
      else this.#counts.set(counted, count >> 1);
    }
  }

  of(id: string): number {
    return this.#counts.get(id) ?? 0;
  }

  forget(id: string): void {
    this.#counts.delete(id);
  }
}
