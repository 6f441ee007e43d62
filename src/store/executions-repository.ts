// Executions: recorded in memory at once, written to SQL in the background as compressed batches; dropped only if unstorable.
import type { Kysely } from 'kysely';
import { AppError } from '../errors.ts';
import type { Database } from './database.ts';
import { withDatabase } from './database-errors.ts';
import {
  deleteBatchesOlderThan,
  encodeBatch,
  findInBatches,
  insertBatch,
  MAX_BATCH_CHARS,
  MAX_RECORDS_PER_BATCH,
  type PreparedExecution,
  prepareExecution,
  readRecord,
} from './execution-batches.ts';
import type { ExecutionRecord, ExecutionsRepository, SerializedExecution } from './types.ts';

export interface ExecutionWriterOptions {
  /** Pending records that trigger a write without waiting for the timer, and the most one batch holds (capped at 5,000). */
  batchSize: number;
  /** How often the background writer looks for pending records, in milliseconds. */
  flushMs: number;
  /** Pending records above which onError hears that the database is not keeping up (once per episode). */
  backlogWarning: number;
  /** Told about every failed background write and about a growing backlog. */
  onError: (error: unknown) => void;
}

const MAX_RETRY_DELAY_MS = 5_000;

/** What one write covers: only full batches (a kick from record()), or also what is pending now (the timer, flush()). */
type WriteScope = 'full batches' | 'all pending';
/** Retention deletes this many batches at a time so one run never holds a huge lock or transaction. */
const DELETE_SLICE = 100;

export function createExecutionsRepository(db: Kysely<Database>, options: ExecutionWriterOptions): ExecutionsRepository {
  return new BatchedExecutions(db, options);
}

class BatchedExecutions implements ExecutionsRepository {
  readonly #db: Kysely<Database>;
  readonly #options: ExecutionWriterOptions;
  readonly #rowsPerInsert: number;
  /**
   * Recorded but not yet committed, in recording order, already serialized; a record leaves only after its INSERT
   * commits. Serialized at once so a request's objects die young instead of surviving collections until their batch.
   */
  readonly #pending = new Map<string, PreparedExecution>();
  readonly #timer: NodeJS.Timeout;
  #writing: Promise<void> | undefined;
  #kickScheduled = false;
  #failures = 0;
  #retryAt = 0;
  #backlogReported = false;
  #closed = false;

  constructor(db: Kysely<Database>, options: ExecutionWriterOptions) {
    this.#db = db;
    this.#options = options;
    this.#rowsPerInsert = Math.max(1, Math.min(options.batchSize, MAX_RECORDS_PER_BATCH));
    this.#timer = setInterval(() => this.#writeInBackground('all pending'), options.flushMs);
    // The writer must never keep the process alive on its own; close() flushes what is left.
    this.#timer.unref();
  }

  record(execution: ExecutionRecord | SerializedExecution): void {
    if (this.#closed) this.#options.onError(new Error(`execution ${execution.execution_id} was recorded after the store was closed`));
    let prepared: PreparedExecution;
    try {
      prepared = prepareExecution(execution);
    } catch (error) {
      // Storing can never succeed (a cycle or a BigInt in the facts, an id that is not a UUID): report it and let it go.
      this.#options.onError(
        new AppError('VALIDATION_ERROR', `execution ${execution.execution_id} cannot be stored and was dropped`, { cause: error }),
      );
      return;
    }
    this.#pending.set(execution.execution_id, prepared);
    // Never drop: past the warning level the record is still kept, and the operator is told once.
    if (this.#pending.size > this.#options.backlogWarning && !this.#backlogReported) {
      this.#backlogReported = true;
      this.#options.onError(
        new AppError('UNAVAILABLE', `${this.#pending.size} executions are waiting to be written; the database is not keeping up`),
      );
    }
    if (this.#pending.size >= this.#rowsPerInsert && !this.#kickScheduled) {
      this.#kickScheduled = true;
      // Deferred so the caller's request never pays for building the INSERT.
      setImmediate(() => {
        this.#kickScheduled = false;
        this.#writeInBackground('full batches');
      });
    }
  }

  async get(id: string): Promise<ExecutionRecord | undefined> {
    const pending = this.#pending.get(id);
    if (pending !== undefined) return readRecord(JSON.parse(pending.json));
    return withDatabase(() => findInBatches(this.#db, id));
  }

  pendingCount(): number {
    return this.#pending.size;
  }

  async flush(): Promise<void> {
    // A write already under way may have started before the newest records: loop until nothing is left.
    while (this.#pending.size > 0 || this.#writing !== undefined) {
      await withDatabase(() => this.#write('all pending'));
    }
  }

  async deleteOlderThan(cutoff: Date): Promise<number> {
    if (Number.isNaN(cutoff.getTime())) throw new AppError('VALIDATION_ERROR', 'the retention cutoff must be a valid date');
    return withDatabase(async () => {
      let deleted = 0;
      for (;;) {
        const { batches, records } = await deleteBatchesOlderThan(this.#db, cutoff, DELETE_SLICE);
        deleted += records;
        if (batches < DELETE_SLICE) return deleted;
      }
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    await this.flush();
  }

  #writeInBackground(what: WriteScope): void {
    if (this.#pending.size === 0 || this.#writing !== undefined || Date.now() < this.#retryAt) return;
    this.#write(what).catch((error: unknown) => this.#options.onError(error));
  }

  /** Joins the write under way or starts one; a failure leaves the records pending and backs the timer off. */
  #write(what: WriteScope): Promise<void> {
    this.#writing ??= this.#drain(what).then(
      () => {
        this.#writing = undefined;
        this.#failures = 0;
        this.#retryAt = 0;
      },
      (error: unknown) => {
        this.#writing = undefined;
        this.#failures += 1;
        this.#retryAt = Date.now() + Math.min(this.#options.flushMs * 2 ** this.#failures, MAX_RETRY_DELAY_MS);
        throw error;
      },
    );
    return this.#writing;
  }

  /**
   * Writes full batches while there are enough pending records; 'all pending' also writes the records pending when it
   * starts. Records arriving meanwhile wait for a full batch or the next tick: writing them at once kept batches at
   * the few dozen that arrive during one insert, and the fixed cost of each write then dominated.
   */
  async #drain(what: WriteScope): Promise<void> {
    let owed = what === 'all pending' ? this.#pending.size : 0;
    while (this.#pending.size >= this.#rowsPerInsert || (owed > 0 && this.#pending.size > 0)) {
      const batch: PreparedExecution[] = [];
      let chars = 0;
      for (const prepared of this.#pending.values()) {
        batch.push(prepared);
        chars += prepared.json.length;
        if (batch.length === this.#rowsPerInsert || chars >= MAX_BATCH_CHARS) break;
      }
      owed -= batch.length;
      await insertBatch(this.#db, await encodeBatch(batch));
      for (const prepared of batch) {
        // A record re-recorded under the same id while this batch was in flight stays pending for the next batch.
        if (this.#pending.get(prepared.id) === prepared) this.#pending.delete(prepared.id);
      }
      if (this.#pending.size <= this.#options.backlogWarning / 2) this.#backlogReported = false;
    }
  }
}
