// Executions are stored as compressed batches: one row per written batch, found again through the time in each id.
import { promisify } from 'node:util';
import { brotliCompress, brotliDecompress, constants } from 'node:zlib';
import { type Kysely, sql } from 'kysely';
import { AppError } from '../errors.ts';
import type { Database } from './database.ts';
import type { ExecutionRecord, SerializedExecution } from './types.ts';

/** Bounds one batch's record count; a batch also closes once its JSON passes MAX_BATCH_CHARS. */
export const MAX_RECORDS_PER_BATCH = 5_000;
/** Bounds one batch's JSON (a recorded fact is at most the request body limit, so one record may exceed it alone). */
export const MAX_BATCH_CHARS = 8 * 1024 * 1024;

// zlib runs on the libuv thread pool: compressing never holds up requests on the event loop.
const compress = promisify(brotliCompress);
const decompress = promisify(brotliDecompress);
/** Brotli at quality 1: measured twice as fast as deflate level 1 on execution JSON, with a smaller result (~10:1). */
const COMPRESSION = { params: { [constants.BROTLI_PARAM_QUALITY]: 1, [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT } };

/** The hex digit runs of a UUID's 8-4-4-4-12 groups, as [start, end) offsets. */
const UUID_HEX_GROUPS: readonly (readonly [number, number])[] = [
  [0, 8],
  [9, 13],
  [14, 18],
  [19, 23],
  [24, 36],
];

/**
 * The 48-bit number at the front of a UUID, by which batches are found: for the UUID v7 execution ids the Unix
 * milliseconds of the evaluation. Undefined for anything that is not a UUID, which no batch can hold.
 */
export function executionIdKey(id: string): number | undefined {
  // Checked by hand rather than by a regular expression: the writer runs this for every record.
  if (id.length !== 36 || id[8] !== '-' || id[13] !== '-' || id[18] !== '-' || id[23] !== '-') return undefined;
  for (const [start, end] of UUID_HEX_GROUPS) {
    for (let i = start; i < end; i++) {
      const c = id.charCodeAt(i);
      const lower = c | 0x20;
      if (!((c >= 0x30 && c <= 0x39) || (lower >= 0x61 && lower <= 0x66))) return undefined;
    }
  }
  return Number.parseInt(id.slice(0, 8), 16) * 0x10000 + Number.parseInt(id.slice(9, 13), 16);
}

/** 0001-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z: the created_at range every batch can store. */
const FIRST_STORABLE_MS = Date.parse('0001-01-01T00:00:00.000Z');
const LAST_STORABLE_MS = Date.parse('9999-12-31T23:59:59.999Z');

/** A record as a batch holds it: its id, its JSON text, the key of its id and its created_at in milliseconds. */
export interface PreparedExecution {
  id: string;
  json: string;
  key: number;
  createdMs: number;
}

/** A batch ready to insert: the records' JSON array compressed, and what the lookups and retention need to know. */
export interface EncodedBatch {
  records: Buffer;
  count: number;
  minKey: number;
  maxKey: number;
  newestAt: string;
}

/** Largest time a UUID v7 holds: 48 bits of milliseconds. */
const LAST_UUID_V7_MS = 2 ** 48 - 1;

/** One record ready for a batch, or the reason it can never be stored. */
export function prepareExecution(execution: ExecutionRecord | SerializedExecution): PreparedExecution {
  if ('outcomeJson' in execution) return prepareSerialized(execution);
  const key = executionIdKey(execution.execution_id);
  if (key === undefined) throw new AppError('VALIDATION_ERROR', `execution id "${execution.execution_id}" is not a UUID`);
  const createdMs = Date.parse(execution.created_at);
  // PostgreSQL's timestamptz cannot hold every JavaScript date; years 1 to 9999 it always can.
  if (!(createdMs >= FIRST_STORABLE_MS && createdMs <= LAST_STORABLE_MS))
    throw new AppError('VALIDATION_ERROR', `execution ${execution.execution_id} has no valid created_at`);
  try {
    const json = JSON.stringify({
      execution_id: execution.execution_id,
      source: execution.source,
      domain: execution.domain,
      facts: execution.facts ?? null,
      fired_rules: execution.fired_rules,
      actions: execution.actions,
      latency_ms: execution.latency_ms,
      revision: execution.revision,
      created_at: execution.created_at,
    });
    return { id: execution.execution_id, json, key, createdMs };
  } catch (error) {
    // A BigInt or a cycle in the facts.
    throw new AppError('VALIDATION_ERROR', `execution ${execution.execution_id} is not JSON-serializable`, { cause: error });
  }
}

/**
 * A record from texts its caller holds: they are embedded as they are, so nothing is serialized again, and the key is
 * the id's time, known without reading the id. The stored form differs (see readRecord); reading it back does not.
 */
function prepareSerialized(execution: SerializedExecution): PreparedExecution {
  const { execution_id: id, createdMs } = execution;
  if (!(Number.isInteger(createdMs) && createdMs >= 0 && createdMs <= LAST_UUID_V7_MS)) {
    throw new AppError('VALIDATION_ERROR', `execution ${id} has no valid creation time`);
  }
  const domain = execution.domain === null ? 'null' : JSON.stringify(execution.domain);
  const json = `{"source":"${execution.source}","domain":${domain},"created_ms":${createdMs},"request":${execution.requestJson},"outcome":${execution.outcomeJson}}`;
  return { id, json, key: createdMs, createdMs };
}

/** A record stored from texts (prepareSerialized): the request holds the facts, the outcome the evaluation. */
interface StoredFromTexts {
  source: ExecutionRecord['source'];
  domain: string | null;
  created_ms: number;
  request: { facts?: unknown } | null;
  outcome: Pick<ExecutionRecord, 'execution_id' | 'fired_rules' | 'actions' | 'latency_ms' | 'revision'>;
}

/** A stored record as the API shows it, whichever way it was stored. */
export function readRecord(stored: ExecutionRecord | StoredFromTexts): ExecutionRecord {
  if (!('outcome' in stored)) return stored;
  const { outcome } = stored;
  return {
    execution_id: outcome.execution_id,
    source: stored.source,
    domain: stored.domain,
    facts: stored.request?.facts ?? null,
    fired_rules: outcome.fired_rules,
    actions: outcome.actions,
    latency_ms: outcome.latency_ms,
    revision: outcome.revision,
    created_at: new Date(stored.created_ms).toISOString(),
  };
}

/** The record as get() returns it, from either form record() takes; for in-memory stand-ins and tests. */
export function asExecutionRecord(execution: ExecutionRecord | SerializedExecution): ExecutionRecord {
  return 'outcomeJson' in execution ? readRecord(JSON.parse(prepareSerialized(execution).json)) : execution;
}

/** Compresses prepared records into one batch. */
export async function encodeBatch(prepared: readonly PreparedExecution[]): Promise<EncodedBatch> {
  if (prepared.length === 0) throw new RangeError('a batch needs at least one record');
  let minKey = Number.POSITIVE_INFINITY;
  let maxKey = Number.NEGATIVE_INFINITY;
  let newest = Number.NEGATIVE_INFINITY;
  const parts: string[] = new Array(prepared.length);
  for (let i = 0; i < prepared.length; i++) {
    const { json, key, createdMs } = prepared[i]!;
    parts[i] = json;
    if (key < minKey) minKey = key;
    if (key > maxKey) maxKey = key;
    if (createdMs > newest) newest = createdMs;
  }
  const compressed = await compress(`[${parts.join(',')}]`, COMPRESSION);
  return { records: compressed, count: prepared.length, minKey, maxKey, newestAt: new Date(newest).toISOString() };
}

/** The records of a stored batch, in the order they were written. */
export async function decodeBatch(records: Buffer): Promise<ExecutionRecord[]> {
  const parsed: unknown = JSON.parse((await decompress(records)).toString('utf8'));
  if (!Array.isArray(parsed)) throw new Error('a stored execution batch is not a JSON array');
  return parsed.map(readRecord);
}

/**
 * Inserts one batch. The bytes travel as base64 text decoded by the database: PGlite's JavaScript bytea encoder is far
 * slower than Buffer's native base64.
 */
export async function insertBatch(db: Kysely<Database>, batch: EncodedBatch): Promise<void> {
  await sql`
    insert into execution_batches (id_keys, newest_at, record_count, records)
    values (int8range(${batch.minKey}, ${batch.maxKey}, '[]'), ${batch.newestAt}, ${batch.count}, decode(${batch.records.toString('base64')}, 'base64'))
  `.execute(db);
}

/** The latest stored record with this id: a re-recorded id is in several batches, and the newest batch wins. */
export async function findInBatches(db: Kysely<Database>, id: string): Promise<ExecutionRecord | undefined> {
  const key = executionIdKey(id);
  if (key === undefined) return undefined;
  const { rows } = await sql<{ records: string }>`
    select encode(records, 'base64') as records from execution_batches
    where id_keys @> ${key}::bigint order by batch_id desc
  `.execute(db);
  for (const row of rows) {
    const found = (await decodeBatch(Buffer.from(row.records, 'base64'))).find((record) => record.execution_id === id);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** Deletes up to `slice` batches whose newest record is older than the cutoff; returns the number of records deleted. */
export async function deleteBatchesOlderThan(
  db: Kysely<Database>,
  cutoff: Date,
  slice: number,
): Promise<{ batches: number; records: number }> {
  const { rows } = await sql<{ record_count: number }>`
    delete from execution_batches where batch_id in (
      select batch_id from execution_batches where newest_at < ${cutoff} limit ${slice}
    ) returning record_count
  `.execute(db);
  return { batches: rows.length, records: rows.reduce((sum, row) => sum + Number(row.record_count), 0) };
}

/** Records stored across all batches (a re-recorded id counts once per batch holding it); for tooling and tests. */
export async function countStoredExecutions(db: Kysely<Database>): Promise<number> {
  const { rows } = await sql<{ n: string | number | null }>`select sum(record_count) as n from execution_batches`.execute(db);
  return Number(rows[0]?.n ?? 0);
}

/** Every stored record, batch by batch in write order; for tooling and tests. */
export async function* storedExecutions(db: Kysely<Database>): AsyncGenerator<ExecutionRecord> {
  let after = 0;
  for (;;) {
    const { rows } = await sql<{ batch_id: string | number; records: string }>`
      select batch_id, encode(records, 'base64') as records from execution_batches where batch_id > ${after} order by batch_id limit 100
    `.execute(db);
    if (rows.length === 0) return;
    for (const row of rows) yield* await decodeBatch(Buffer.from(row.records, 'base64'));
    after = Number(rows[rows.length - 1]!.batch_id);
  }
}
