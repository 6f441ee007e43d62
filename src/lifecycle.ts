// What the process has opened, closed newest first: on a signal, including one that arrives while the service is still
// starting, and when start-up fails half way, so nothing is left half written or locked.

import { setTimeout as sleep } from 'node:timers/promises';

/** Thrown by `Lifecycle.open` when a signal came in while the step was starting: start-up ends there, cleanly. */
export class StopRequested extends Error {
  readonly signal: string;
  /** The step that was still starting when its wait ran out, left behind; undefined when it finished. */
  readonly leftBehind: string | undefined;

  constructor(signal: string, leftBehind?: string) {
    super(`${signal} received during start-up`);
    this.name = 'StopRequested';
    this.signal = signal;
    this.leftBehind = leftBehind;
  }
}

export interface StepOptions {
  /**
   * For a step that writes nothing while it starts (connecting to a broker): after a stop request it is waited for this
   * long at most, then left behind, so a dependency that never answers cannot hold the stop past its timeout.
   */
  readonly leaveBehindAfterMs?: number;
}

interface Opened {
  readonly name: string;
  readonly close: () => Promise<void> | void;
}

export class Lifecycle {
  readonly #opened: Opened[] = [];
  #signal: string | undefined;
  #starting: string | undefined;
  /** Closes of steps left behind that opened after all: closeAll waits for them too. */
  readonly #lateCloses = new Set<Promise<void>>();
  #stopRequested: () => void = () => undefined;
  readonly #stopped = new Promise<void>((resolve) => {
    this.#stopRequested = resolve;
  });

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
    this.#stopRequested();
    return true;
  }

  /**
   * Runs one start-up step and keeps how to close what it opened. A step cannot be interrupted half way, so a signal
   * that arrived meanwhile is acted on once it is done: StopRequested, with its result already registered for closing.
   * A step with `leaveBehindAfterMs` is left behind when it is not done that long after the signal; should it open
   * after all, it is closed, and closeAll waits for that close.
   */
  async open<T>(
    name: string,
    start: () => Promise<T> | T,
    close: (opened: T) => Promise<void> | void,
    options: StepOptions = {},
  ): Promise<T> {
    this.#starting = name;
    const opened =
      options.leaveBehindAfterMs === undefined
        ? await start()
        : await this.#unlessLeftBehind(name, start, close, options.leaveBehindAfterMs);
    this.#starting = undefined;
    this.#opened.push({ name, close: () => close(opened) });
    if (this.#signal !== undefined) throw new StopRequested(this.#signal);
    return opened;
  }

  async #unlessLeftBehind<T>(
    name: string,
    start: () => Promise<T> | T,
    close: (opened: T) => Promise<void> | void,
    waitMs: number,
  ): Promise<T> {
    const starting = Promise.resolve().then(start);
    const done = starting.then((opened) => ({ opened }));
    const first = await Promise.race([done, this.#stopped.then(() => undefined)]);
    if (first !== undefined) return first.opened;
    const inTime = await Promise.race([done, sleep(waitMs, undefined, { ref: false })]);
    if (inTime !== undefined) return inTime.opened;
    this.#starting = undefined;
    // Its failure no longer matters, and what it may still open is closed rather than left open.
    starting.then(
      (opened) => {
        const closing = Promise.resolve()
          .then(() => close(opened))
          .catch(() => undefined)
          .finally(() => this.#lateCloses.delete(closing));
        this.#lateCloses.add(closing);
      },
      () => undefined,
    );
    throw new StopRequested(this.#signal as string, name);
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
    // A step left behind that opened meanwhile is closing too: the process must not exit under it.
    await Promise.all(this.#lateCloses);
    if (failure !== undefined) throw failure;
  }
}
