// Executions: recorded in memory at once, written to SQL in the background as compressed batches; dropped only if unstorable.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import { AppError, isRetryable } from '../errors.ts';
import type { Database } from './database.ts';
import { withDatabase } from './database-errors.ts';
import {
  BatchBuffer,
  deleteBatchesOlderThan,
  findInBatches,
  insertBatch,
  MAX_BATCH_BYTES,
  MAX_RECORDS_PER_BATCH,
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
  /**
   * Writes one closed batch as a row; by default compressed on the thread pool and inserted through `db`. Embedded PGlite
   * passes its thread's insert, which compresses there.
   */
  writeBatch?: (batch: BatchBuffer) => Promise<void>;
}

const MAX_RETRY_DELAY_MS = 5_000;
/** How long close() keeps retrying writes the database refuses for now; the service's shutdown timeout bounds it too. */
export const CLOSE_RETRY_MS = 20_000;
/** Batches being written rarely number more than two; their buffers are kept for reuse up to this many. */
const MAX_SPARE_BATCHES = 3;
/**
 * Largest buffer kept for reuse, and largest a new batch starts with: a batch of 500 typical records fills ~250 KB, and
 * one huge record (up to the body limit) must not keep its buffer reserved for the life of the process.
 */
export const MAX_SPARE_BYTES = 4 * 1024 * 1024;

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
  readonly #writeBatch: (batch: BatchBuffer) => Promise<void>;
  /**
   * Recorded but not yet committed, in recording order: the batch taking records, and the full ones waiting for (or in)
   * their INSERT, oldest first. A record leaves only after its INSERT commits.
   */
  #open = new BatchBuffer();
  readonly #full: BatchBuffer[] = [];
  #pendingCount = 0;
  /** JSON bytes of the pending records: one large record can weigh as much as thousands of ordinary ones. */
  #pendingBytes = 0;
  /** Written batches whose buffers the next batches reuse, so a batch's memory is neither allocated nor grown again. */
  readonly #spares: BatchBuffer[] = [];
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
    this.#writeBatch = options.writeBatch ?? (async (batch) => insertBatch(db, await batch.encode()));
    this.#timer = setInterval(() => this.#writeInBackground('all pending'), options.flushMs);
    // The writer must never keep the process alive on its own; close() flushes what is left.
    this.#timer.unref();
  }

  record(execution: ExecutionRecord | SerializedExecution): void {
    if (this.#closed) this.#options.onError(new Error(`execution ${execution.execution_id} was recorded after the store was closed`));
    const bytesBefore = this.#open.recordBytes;
    try {
      this.#open.add(execution);
    } catch (error) {
      // Storing can never succeed (a cycle or a BigInt in the facts, an id that is not a UUID): report it and let it go.
      this.#options.onError(
        new AppError('VALIDATION_ERROR', `execution ${execution.execution_id} cannot be stored and was dropped`, { cause: error }),
      );
      return;
    }
    this.#pendingCount += 1;
    this.#pendingBytes += this.#open.recordBytes - bytesBefore;
    // Never drop: past the warning level the record is still kept, and the operator is told once.
    if (this.#pendingCount > this.#options.backlogWarning && !this.#backlogReported) {
      this.#backlogReported = true;
      this.#options.onError(
        new AppError('UNAVAILABLE', `${this.#pendingCount} executions are waiting to be written; the database is not keeping up`),
      );
    }
    if (this.#open.count >= this.#rowsPerInsert || this.#open.byteLength >= MAX_BATCH_BYTES) {
      this.#closeOpenBatch();
      if (!this.#kickScheduled) {
        this.#kickScheduled = true;
        // Deferred so the caller's request never pays for building the INSERT.
        setImmediate(() => {
          this.#kickScheduled = false;
          this.#writeInBackground('full batches');
        });
      }
    }
  }

  async get(anyCaseId: string): Promise<ExecutionRecord | undefined> {
    // UUIDs compare case-insensitively; ids are issued and stored in lower case.
    const id = anyCaseId.toLowerCase();
    const pending = this.#open.find(id);
    if (pending !== undefined) return pending;
    for (let index = this.#full.length - 1; index >= 0; index--) {
      const found = this.#full[index]!.find(id);
      if (found !== undefined) return found;
    }
    return withDatabase(() => findInBatches(this.#db, id));
  }

  reservedBytes(): number {
    let bytes = this.#open.capacity;
    for (const batch of this.#full) bytes += batch.capacity;
    for (const batch of this.#spares) bytes += batch.capacity;
    return bytes;
  }

  pendingCount(): number {
    return this.#pendingCount;
  }

  pendingBytes(): number {
    return this.#pendingBytes;
  }

  async flush(): Promise<void> {
    // A write already under way may have started before the newest records: loop until nothing is left.
    while (this.#pendingCount > 0 || this.#writing !== undefined) {
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
    // A database away for a moment (a failover, a restart) must not cost the pending records: keep trying for a while.
    const giveUpAt = Date.now() + CLOSE_RETRY_MS;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.flush();
        return;
      } catch (error) {
        if (!isRetryable(error) || Date.now() >= giveUpAt) {
          // Said once, with the count, so an operator knows what the shutdown cost.
          this.#options.onError(new Error(`${this.#pendingCount} pending executions could not be written and are lost`, { cause: error }));
          throw error;
        }
        this.#options.onError(error);
        await sleep(Math.min(this.#options.flushMs * 2 ** attempt, MAX_RETRY_DELAY_MS, Math.max(giveUpAt - Date.now(), 0)));
      }
    }
  }

  #writeInBackground(what: WriteScope): void {
    if (this.#pendingCount === 0 || this.#writing !== undefined || Date.now() < this.#retryAt) return;
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
   * Writes the full batches; 'all pending' first closes the batch taking records, so what was recorded before it started
   * is written too. Records arriving meanwhile wait for a full batch or the next tick: writing them at once kept batches
   * at the few dozen that arrive during one insert, and the fixed cost of each write then dominated.
   */
  async #drain(what: WriteScope): Promise<void> {
    if (what === 'all pending' && this.#open.count > 0) this.#closeOpenBatch();
    while (this.#full.length > 0) {
      const batch = this.#full[0]!;
      await this.#writeBatch(batch);
      this.#full.shift();
      this.#pendingCount -= batch.count;
      this.#pendingBytes -= batch.recordBytes;
      if (this.#spares.length < MAX_SPARE_BATCHES && batch.capacity <= MAX_SPARE_BYTES) this.#spares.push(batch);
      if (this.#pendingCount <= this.#options.backlogWarning / 2) this.#backlogReported = false;
    }
  }

  #closeOpenBatch(): void {
    const closed = this.#open;
    this.#full.push(closed);
    // Without a spare, a new batch starts as large as the one just closed (up to a bound), rather than growing to it again.
    const bytes = Math.min(closed.byteLength + (closed.byteLength >> 2), MAX_SPARE_BYTES);
    this.#open = new BatchBuffer(this.#spares.pop() ?? { bytes });
  }
}

/** Bytes of pending record JSON that weigh as much as one record against RULES_EXECUTION_BACKLOG_MAX. */
const BACKLOG_BYTES_PER_RECORD = 512;

/**
 * The execution backlog as RULES_EXECUTION_BACKLOG_MAX measures it: the records waiting, or their JSON bytes / 512 when
 * that is more, so a few large records bound memory as surely as many ordinary ones.
 */
export function executionBacklog(executions: Pick<ExecutionsRepository, 'pendingCount' | 'pendingBytes'>): number {
  return backlogWeight(executions.pendingCount(), executions.pendingBytes());
}

/** What `records` records of `bytes` of JSON in all weigh against RULES_EXECUTION_BACKLOG_MAX. */
export function backlogWeight(records: number, bytes: number): number {
  return Math.max(records, Math.ceil(bytes / BACKLOG_BYTES_PER_RECORD));
}
