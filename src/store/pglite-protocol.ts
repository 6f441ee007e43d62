// Messages between the service and the PGlite worker thread (pglite-worker.ts ↔ pglite-thread.ts).
import type { BatchContents } from './execution-batches.ts';

export type ThreadRequest =
  | {
      readonly id: number;
      readonly op: 'query';
      readonly sql: string;
      readonly params: unknown[] | undefined;
      readonly rowMode: 'array' | 'object' | undefined;
      /** The open transaction to run in; absent: outside any transaction. */
      readonly tx: number | undefined;
    }
  /** An execution batch to compress and insert on the thread (execution-batches.ts). */
  | { readonly id: number; readonly op: 'insertExecutionBatch'; readonly batch: BatchContents }
  | { readonly id: number; readonly op: 'begin' }
  | { readonly id: number; readonly op: 'commit' | 'rollback'; readonly tx: number }
  | { readonly id: number; readonly op: 'close' };

/** Id 0 answers the start-up: the database is open, or why it could not be opened. */
export type ThreadReply =
  | { readonly id: number; readonly ok: true; readonly value: unknown }
  | { readonly id: number; readonly ok: false; readonly error: SerializedError };

/** An error as it crosses the thread boundary, with its own properties (SQLSTATE `code`, `constraint`, ...) kept. */
export interface SerializedError {
  readonly name: string;
  readonly message: string;
  readonly fields: Record<string, unknown>;
}
