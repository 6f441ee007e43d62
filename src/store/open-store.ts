// Opens the SQL store: real PostgreSQL through a pg pool when a URL is given, else embedded PGlite in a data directory.
import { mkdir } from 'node:fs/promises';
import { type Dialect, Kysely, PGliteDialect, PostgresDialect, type PostgresPool, type PostgresPoolClient, sql } from 'kysely';
import pg from 'pg';
import { createAuditRepository } from './audit-repository.ts';
import { type DataDirLock, lockDataDir } from './data-dir-lock.ts';
import type { Database } from './database.ts';
import { CONNECT_FAILED, isQueryTimeout, withDatabase } from './database-errors.ts';
import { createExecutionsRepository } from './executions-repository.ts';
import { migrateToLatest } from './migrate.ts';
import { PgliteWorker } from './pglite-worker.ts';
import { createRulesRepository } from './rules-repository.ts';
import { createRulesetsRepository } from './rulesets-repository.ts';
import type { Store } from './types.ts';

export interface OpenStoreOptions {
  /** postgres://… of a real PostgreSQL server; when absent, embedded PGlite is used. */
  databaseUrl?: string;
  /** Where PGlite keeps its files (created if missing); `memory://` keeps everything in memory. Ignored with databaseUrl. */
  dataDir: string;
  /** Pending executions that trigger a write before the timer fires, and the most one stored batch holds. Default 2,000. */
  executionBatchSize?: number;
  /** How often pending executions are written, in milliseconds. Default 50. */
  executionFlushMs?: number;
  /** Pending executions above which onError is told the database is not keeping up. Default 100,000. */
  executionBacklogWarning?: number;
  /** PostgreSQL pool size. Default 10. Ignored for PGlite, which has one connection. */
  poolSize?: number;
  /** How long a PostgreSQL query may go unanswered before it fails as unavailable, in milliseconds. Default 10,000. */
  queryTimeoutMs?: number;
  /** Background failures: execution writes, idle pool connections, a growing backlog. Default: a process warning. */
  onError?: (error: unknown) => void;
}

/** The SQL store; `db` is for tooling and tests, application code uses the Store interface. */
export interface SqlStore extends Store {
  readonly db: Kysely<Database>;
  readonly dialect: 'postgres' | 'pglite';
}

/**
 * Each insert has a fixed cost (on PGlite ~1 ms of CPU), so at high rates larger batches cost less per record: 2,000
 * against 500 took ~4 µs off each at 30,000 records a second. A lookup parses only the record it wants (record_ends).
 */
export const DEFAULT_EXECUTION_BATCH_SIZE = 2_000;

export async function openStore(options: OpenStoreOptions): Promise<SqlStore> {
  // Checked before anything is opened: a zero flush interval would spin, a zero batch would never fill.
  for (const name of ['executionBatchSize', 'executionFlushMs', 'executionBacklogWarning', 'poolSize', 'queryTimeoutMs'] as const) {
    const value = options[name];
    if (value !== undefined && (!Number.isInteger(value) || value < 1)) {
      throw new RangeError(`${name} must be a positive integer, got ${String(value)}`);
    }
  }
  const onError = options.onError ?? reportAsWarning;
  const dialect = options.databaseUrl === undefined ? 'pglite' : 'postgres';
  let pglite: PgliteWorker | undefined;
  let lock: DataDirLock | undefined;
  let sqlDialect: Dialect;
  if (options.databaseUrl === undefined) {
    ({ pglite, lock } = await openPglite(options.dataDir));
    sqlDialect = new PGliteDialect({ pglite });
  } else {
    sqlDialect = new PostgresDialect({
      pool: droppingStuckClients(
        openPool(options.databaseUrl, options.poolSize ?? 10, onError, options.queryTimeoutMs ?? QUERY_TIMEOUT_MS),
        onError,
      ),
    });
  }
  const db = new Kysely<Database>({ dialect: sqlDialect });
  try {
    // Migrations may take long on a big database: on PostgreSQL they run on a connection of their own without a timeout.
    const url = options.databaseUrl;
    if (url === undefined) await withDatabase(() => migrateToLatest(db as Kysely<unknown>));
    else await withDatabase(() => migrateWithoutTimeout(url, onError));
  } catch (error) {
    await db.destroy();
    await lock?.release();
    throw error;
  }

  const executions = createExecutionsRepository(db, {
    batchSize: options.executionBatchSize ?? DEFAULT_EXECUTION_BATCH_SIZE,
    flushMs: options.executionFlushMs ?? 50,
    backlogWarning: options.executionBacklogWarning ?? 100_000,
    onError,
    ...(pglite === undefined ? {} : { writeBatch: (batch) => pglite.insertExecutionBatch(batch.contents()) }),
  });
  let closing: Promise<void> | undefined;
  return {
    db,
    dialect,
    rules: createRulesRepository(db),
    rulesets: createRulesetsRepository(db),
    executions,
    audit: createAuditRepository(db),
    async ping() {
      try {
        // A table of the schema, not `select 1`: a database emptied or made again under the service answers, but serves nothing.
        await sql`select 1 from store_revision limit 1`.execute(db);
        return true;
      } catch {
        return false;
      }
    },
    close() {
      closing ??= (async () => {
        try {
          await executions.close();
        } finally {
          await db.destroy();
          await lock?.release();
        }
      })();
      return closing;
    },
  };
}

/** How long opening a PostgreSQL connection may take before it fails as unavailable. */
const CONNECT_TIMEOUT_MS = 10_000;
/** How long a PostgreSQL query may go unanswered by default before it fails as unavailable (the service's queries are short). */
const QUERY_TIMEOUT_MS = 10_000;
/**
 * Server-side bounds, so one instance that stalls (a pause, a frozen VM) cannot stop every other instance's writes: a
 * lock is waited for at most this long (the store revision row serializes all rule changes), and a session idle inside a
 * transaction for longer is ended by the server, which releases its locks. The client's own time-out only stops waiting:
 * the query went on queueing on the server. No statement_timeout: a slow retention DELETE must still finish.
 */
const LOCK_TIMEOUT_MS = 5_000;
const IDLE_IN_TRANSACTION_MS = 15_000;

async function migrateWithoutTimeout(connectionString: string, onError: (error: unknown) => void): Promise<void> {
  const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: openPool(connectionString, 1, onError, undefined) }) });
  try {
    await migrateToLatest(db);
  } finally {
    await db.destroy();
  }
}

async function openPglite(dataDir: string): Promise<{ pglite: PgliteWorker; lock: DataDirLock | undefined }> {
  if (dataDir.startsWith('memory://')) return { pglite: await PgliteWorker.open(dataDir), lock: undefined };
  await mkdir(dataDir, { recursive: true });
  const lock = await lockDataDir(dataDir);
  try {
    return { pglite: await PgliteWorker.open(dataDir), lock };
  } catch (error) {
    await lock.release();
    throw error;
  }
}

export function openPool(
  connectionString: string,
  max: number,
  onError: (error: unknown) => void,
  queryTimeoutMs: number | undefined,
): pg.Pool {
  // A server that accepts connections but never answers must fail the caller (start-up, a request), not hang it; one
  // that stops answering on an open connection too.
  const pool = new pg.Pool({
    connectionString,
    max,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    ...(queryTimeoutMs === undefined
      ? {}
      : {
          query_timeout: queryTimeoutMs,
          lock_timeout: Math.min(LOCK_TIMEOUT_MS, queryTimeoutMs),
          idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_MS,
        }),
  });
  // An idle client losing its connection emits 'error'; unhandled, it would crash the process.
  pool.on('error', onError);
  // pg-pool takes its listener off a client before handing it over, and an error can arrive in that gap (a session ended
  // as it opened, during a restart or failover): every client keeps a listener for good. The query that follows fails.
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
  });
  return pool;
}

/**
 * The pool as Kysely uses it, except that a client whose query timed out is dropped when released, not reused: pg
 * stops waiting but the connection still waits for that answer, so every later query on it would time out too. A
 * checked-out client's connection errors (the server ending a session idle in a transaction) are reported, not thrown:
 * pg-pool listens only to idle clients, and an unheard 'error' event would end the process.
 */
function droppingStuckClients(pool: pg.Pool, onError: (error: unknown) => void): PostgresPool {
  return {
    options: pool.options,
    end: () => pool.end(),
    async connect(): Promise<PostgresPoolClient> {
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (error) {
        // Once the store is open, a connection the server refuses (database closed to connections, dropped, starting up) is an outage.
        throw Object.assign(new Error('could not connect to the database', { cause: error }), { code: CONNECT_FAILED });
      }
      let stuck = false;
      const lost = (error: Error) => {
        stuck = true;
        onError(error);
      };
      client.on('error', lost);
      return {
        processID: (client as { processID?: number }).processID,
        query: (async (text: string, parameters: readonly unknown[]) => {
          // The connection still waits for the timed-out answer: a ROLLBACK sent now would wait (and time out) too.
          if (stuck) throw new Error('query read timeout: the connection is dropped after an earlier query timed out');
          try {
            return await client.query(text, parameters as unknown[]);
          } catch (error) {
            if (isQueryTimeout(error)) stuck = true;
            throw error;
          }
        }) as unknown as PostgresPoolClient['query'],
        release: (destroy?: boolean) => {
          client.off('error', lost);
          client.release(destroy === true || stuck);
        },
      };
    },
  };
}

function reportAsWarning(error: unknown): void {
  process.emitWarning(error instanceof Error ? error : new Error(String(error)));
}
