// Worker entry: runs embedded PGlite on its own thread, so its WebAssembly PostgreSQL never blocks the service's event loop.
// Protocol (see pglite-worker.ts): requests {id, op, ...} in, {id, ok, value | error} out; a transaction is held open until
// the main thread commits or rolls it back.
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite, type Transaction } from '@electric-sql/pglite';
import { compressBatchSync, INSERT_BATCH_SQL, insertBatchParameters } from './execution-batches.ts';
import type { SerializedError, ThreadReply, ThreadRequest } from './pglite-protocol.ts';
import { statementMessage } from './wire-statement.ts';

const port = parentPort;
if (port === null) throw new Error('pglite-thread.ts runs only as a worker thread');

/** Thrown inside a transaction callback to make PGlite roll it back. */
const ROLLBACK = Symbol('rollback');

interface OpenTransaction {
  readonly tx: Transaction;
  /** Ends the transaction callback: commit when true, roll back when false. */
  finish(commit: boolean): void;
  /** Settles once PGlite has committed or rolled back. */
  readonly closed: Promise<void>;
}

const transactions = new Map<number, OpenTransaction>();

function serialize(error: unknown): SerializedError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error), fields: {} };
  // SQLSTATE, constraint, detail and the rest are own properties; structured clone would drop them from an Error.
  const fields: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(error)) {
    if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) fields[key] = value;
  }
  return { name: error.name, message: error.message, fields };
}

function reply(message: ThreadReply): void {
  port!.postMessage(message);
}

function begin(db: PGlite, id: number): void {
  let finish: (commit: boolean) => void = () => undefined;
  const decided = new Promise<boolean>((resolve) => {
    finish = resolve;
  });
  let started = false;
  const closed = db.transaction(async (tx) => {
    started = true;
    // `closed` is read later: the callback runs once PGlite has begun, after the assignment below.
    transactions.set(id, {
      tx,
      finish,
      get closed() {
        return closed;
      },
    });
    reply({ id, ok: true, value: id });
    if (!(await decided)) throw ROLLBACK;
  });
  closed.then(
    () => transactions.delete(id),
    (error: unknown) => {
      transactions.delete(id);
      // BEGIN itself failed: the request is still waiting for its answer.
      if (!started) reply({ id, ok: false, error: serialize(error) });
    },
  );
}

async function end(request: { id: number; tx: number }, commit: boolean): Promise<void> {
  const open = transactions.get(request.tx);
  if (open === undefined) throw new Error(`transaction ${request.tx} is not open`);
  open.finish(commit);
  try {
    await open.closed;
  } catch (error) {
    if (error !== ROLLBACK) throw error;
  }
}

async function handle(db: PGlite, request: ThreadRequest): Promise<unknown> {
  switch (request.op) {
    case 'query': {
      const target = request.tx === undefined ? db : transactions.get(request.tx)?.tx;
      if (target === undefined) throw new Error(`transaction ${request.tx} is not open`);
      const result = await target.query(request.sql, request.params, { rowMode: request.rowMode });
      return { rows: result.rows, affectedRows: result.affectedRows, fields: result.fields };
    }
    case 'insertExecutionBatch': {
      // Compressed here, on this thread, so the service's event loop pays only for handing the bytes over.
      const message = statementMessage(INSERT_BATCH_SQL, insertBatchParameters(compressBatchSync(request.batch)));
      // The locks query() takes: never inside a transaction another request holds open, never beside another query.
      await db._runExclusiveTransaction(() => db._runExclusiveQuery(() => db.execProtocol(message)));
      return null;
    }
    case 'commit':
      return end(request, true);
    case 'rollback':
      return end(request, false);
    case 'close':
      await db.close();
      return null;
    default:
      throw new Error('unknown request');
  }
}

let db: PGlite;
try {
  db = await PGlite.create(workerData.dataDir as string);
} catch (error) {
  reply({ id: 0, ok: false, error: serialize(error) });
  process.exit(0);
}
port.on('message', (request: ThreadRequest) => {
  if (request.op === 'begin') {
    begin(db, request.id);
    return;
  }
  handle(db, request).then(
    (value) => reply({ id: request.id, ok: true, value }),
    (error: unknown) => reply({ id: request.id, ok: false, error: serialize(error) }),
  );
});
reply({ id: 0, ok: true, value: null });
