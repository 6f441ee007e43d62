// What the process has opened, closed newest first: on a signal, including one that arrives while the service is still
// starting, and when start-up fails half way, so nothing is left half written or locked.

/** Thrown by `Lifecycle.open` when a signal came in while the step was starting: start-up ends there, cleanly. */
export class StopRequested extends Error {
  readonly signal: string;

  constructor(signal: string) {
    super(`${signal} received during start-up`);
    this.name = 'StopRequested';
    this.signal = signal;
  }
}

interface Opened {
  readonly name: string;
  readonly close: () => Promise<void> | void;
}

export class Lifecycle {
  readonly #opened: Opened[] = [];
  #signal: string | undefined;
  #starting: string | undefined;

  /** The first stop signal received, if any. */
  get stopSignal(): string | undefined {
    return this.#signal;
  }

  /** Records a stop signal; answers false when one was already recorded (the stop is under way). */
  /** The step whose start is under way, or that failed: start-up failures name it. */
  get stepInProgress(): string | undefined {
    return this.#starting;
  }

  requestStop(signal: string): boolean {
    if (this.#signal !== undefined) return false;
    this.#signal = signal;
    return true;
  }

  /**
   * Runs one start-up step and keeps how to close what it opened. A step cannot be interrupted half way, so a signal
   * that arrived meanwhile is acted on once it is done: StopRequested, with its result already registered for closing.
   */
  async open<T>(name: string, start: () => Promise<T> | T, close: (opened: T) => Promise<void> | void): Promise<T> {
    this.#starting = name;
    const opened = await start();
    this.#starting = undefined;
    this.#opened.push({ name, close: () => close(opened) });
    if (this.#signal !== undefined) throw new StopRequested(this.#signal);
    return opened;
  }

  /**
   * Closes everything opened, newest first. Every step is tried even after one fails (a database must still be closed
   * when the Kafka consumer could not leave its group); the first failure is thrown at the end, named by its step.
   */
  async closeAll(): Promise<void> {
    let failure: Error | undefined;
    for (let next = this.#opened.pop(); next !== undefined; next = this.#opened.pop()) {
      try {
        await next.close();
      } catch (error) {
        failure ??= new Error(`closing ${next.name} failed`, { cause: error });
      }
    }
    if (failure !== undefined) throw failure;
  }
}
