// Embedded PGlite on a worker thread, behind the interface Kysely's PGlite dialect expects: its WebAssembly PostgreSQL
// (tens of µs per inserted row, milliseconds per batch) then runs beside the event loop instead of inside it.
import { Worker } from 'node:worker_threads';
import type { PGlite, PGliteQueryOptions, PGliteQueryResults, PGliteTransaction } from 'kysely';
import type { BatchContents } from './execution-batches.ts';
import type { SerializedError, ThreadReply, ThreadRequest } from './pglite-protocol.ts';

const THREAD_ENTRY = new URL('./pglite-thread.ts', import.meta.url);

type Request = ThreadRequest extends infer R ? (R extends ThreadRequest ? Omit<R, 'id'> : never) : never;

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

/** The `code` of every call's error once the thread is gone: the database is unavailable until the process restarts. */
export const THREAD_STOPPED = 'PGLITE_THREAD_STOPPED';

export class PgliteWorker implements PGlite {
  closed = false;
  ready = true;
  readonly waitReady = Promise.resolve();
  readonly #worker: Worker;
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;
  /** Why the thread stopped; every later call fails with it. */
  #stopped: Error | undefined;

  /**
   * Opens the database in `dataDir` (or `memory://`) on a new thread; rejects with PGlite's own error when it cannot.
   * `entry` is the thread's script (tests give one that fails on purpose).
   */
  static async open(dataDir: string, entry: URL = THREAD_ENTRY): Promise<PgliteWorker> {
    const worker = new Worker(entry, { workerData: { dataDir } });
    const opened = new Promise<void>((resolve, reject) => {
      const onExit = (code: number): void => reject(new Error(`the embedded database thread stopped while opening (exit code ${code})`));
      worker.once('error', reject);
      worker.once('exit', onExit);
      worker.once('message', (reply: ThreadReply) => {
        worker.off('error', reject);
        worker.off('exit', onExit);
        if (reply.ok) resolve();
        else reject(deserialize(reply.error));
      });
    });
    try {
      await opened;
    } catch (error) {
      await worker.terminate();
      throw error;
    }
    return new PgliteWorker(worker);
  }

  private constructor(worker: Worker) {
    this.#worker = worker;
    // Only pending calls keep the process alive, as an in-thread PGlite would.
    worker.unref();
    worker.on('message', (reply: ThreadReply) => this.#settle(reply));
    worker.on('error', (error) => this.#stop(error));
    worker.on('exit', (code) =>
      this.#stop(Object.assign(new Error(`the embedded database thread stopped (exit code ${code})`), { code: THREAD_STOPPED })),
    );
  }

  async query<T>(sql: string, params?: unknown[], options?: PGliteQueryOptions): Promise<PGliteQueryResults<T>> {
    return (await this.#call({ op: 'query', sql, params, rowMode: options?.rowMode, tx: undefined })) as PGliteQueryResults<T>;
  }

  async transaction<T>(callback: (tx: PGliteTransaction) => Promise<T>): Promise<T> {
    // The worker answers a begin with the transaction's id once PGlite has started it.
    const tx = (await this.#call({ op: 'begin' })) as number;
    let ended = false;
    const transaction: PGliteTransaction = {
      query: async <R>(sql: string, params?: unknown[], options?: PGliteQueryOptions) =>
        (await this.#call({ op: 'query', sql, params, rowMode: options?.rowMode, tx })) as PGliteQueryResults<R>,
      rollback: async () => {
        ended = true;
        await this.#call({ op: 'rollback', tx });
      },
    };
    let result: T;
    try {
      result = await callback(transaction);
    } catch (error) {
      if (!ended) await this.#call({ op: 'rollback', tx }).catch(() => undefined);
      throw error;
    }
    if (!ended) await this.#call({ op: 'commit', tx });
    return result;
  }

  /** Compresses and inserts an execution batch on the thread (its JSON in shared memory reaches the thread without a copy). */
  async insertExecutionBatch(batch: BatchContents): Promise<void> {
    await this.#call({ op: 'insertExecutionBatch', batch });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      if (this.#stopped === undefined) await this.#call({ op: 'close' });
    } finally {
      await this.#worker.terminate();
    }
  }

  #call(request: Request): Promise<unknown> {
    if (this.#stopped !== undefined) return Promise.reject(this.#stopped);
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      if (this.#pending.size === 0) this.#worker.ref();
      this.#pending.set(id, { resolve, reject });
      this.#worker.postMessage({ ...request, id });
    });
  }

  #settle(reply: ThreadReply): void {
    const pending = this.#pending.get(reply.id);
    if (pending === undefined) return;
    this.#pending.delete(reply.id);
    if (this.#pending.size === 0) this.#worker.unref();
    if (reply.ok) pending.resolve(reply.value);
    else pending.reject(deserialize(reply.error));
  }

  #stop(error: Error): void {
    this.#stopped ??= error;
    this.closed = true;
    for (const pending of this.#pending.values()) pending.reject(this.#stopped);
    this.#pending.clear();
  }
}

/** An Error carrying the database error's fields (SQLSTATE `code`, `constraint`, ...), as pg and PGlite errors do. */
function deserialize(serialized: SerializedError): Error {
  const error = new Error(serialized.message);
  error.name = serialized.name;
  Object.assign(error, serialized.fields);
  return error;
}
