// Executions are stored as compressed batches: one row per written batch, found again through the time in each id.
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { brotliCompress, brotliCompressSync, brotliDecompress, constants } from 'node:zlib';
import { CompiledQuery, type Kysely, sql } from 'kysely';
import { AppError } from '../errors.ts';
import type { Database } from './database.ts';
import type { ExecutionRecord, SerializedExecution } from './types.ts';

/** Bounds one batch's record count; a batch also closes once its JSON passes MAX_BATCH_BYTES. */
export const MAX_RECORDS_PER_BATCH = 5_000;
/** Bounds one batch's JSON (a recorded fact is at most the request body limit, so one record may exceed it alone). */
export const MAX_BATCH_BYTES = 8 * 1024 * 1024;

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
 * Whether the text is a UUID: hex digits in groups of 8-4-4-4-12, in either case or, with `lowercaseOnly`, in lower
 * case (lookups lowercase the id they are given, so only a lowercase id can be stored and found again).
 */
export function isUuidText(id: string, lowercaseOnly = false): boolean {
  // Checked by hand rather than by a regular expression: the writer checks every record.
  if (id.length !== 36 || id[8] !== '-' || id[13] !== '-' || id[18] !== '-' || id[23] !== '-') return false;
  const caseBit = lowercaseOnly ? 0 : 0x20;
  for (const [start, end] of UUID_HEX_GROUPS) {
    for (let i = start; i < end; i++) {
      const c = id.charCodeAt(i);
      const folded = c | caseBit;
      if (!((c >= 0x30 && c <= 0x39) || (folded >= 0x61 && folded <= 0x66))) return false;
    }
  }
  return true;
}

/**
 * The 48-bit number at the front of a UUID, by which batches are found: for the UUID v7 execution ids the Unix
 * milliseconds of the evaluation. Undefined for anything that is not a UUID, which no batch can hold.
 */
export function executionIdKey(id: string): number | undefined {
  if (!isUuidText(id)) return undefined;
  return Number.parseInt(id.slice(0, 8), 16) * 0x10000 + Number.parseInt(id.slice(9, 13), 16);
}

/** 0001-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z: the created_at range every batch can store. */
const FIRST_STORABLE_MS = Date.parse('0001-01-01T00:00:00.000Z');
const LAST_STORABLE_MS = Date.parse('9999-12-31T23:59:59.999Z');

/** A closed batch as it travels to a writer on another thread: the JSON array's bytes and what its row needs beside them. */
export interface BatchContents {
  json: Uint8Array;
  /** Where each record's JSON ends in `json`, as 32-bit big-endian offsets: a lookup parses only the record it wants. */
  ends: Uint8Array;
  /** Made when the batch was, so every attempt to insert it names the same batch. */
  key: string;
  count: number;
  minKey: number;
  maxKey: number;
  newestAt: string;
}

/** A batch ready to insert: the records' JSON array compressed, and what the lookups and retention need to know. */
export interface EncodedBatch {
  records: Buffer;
  ends: Uint8Array;
  key: string;
  count: number;
  minKey: number;
  maxKey: number;
  newestAt: string;
}

/** Largest time a UUID v7 holds: 48 bits of milliseconds. */
const LAST_UUID_V7_MS = 2 ** 48 - 1;
/** Every id a batch holds is a UUID: 36 ASCII characters, so the ids sit in one buffer at a fixed stride. */
const ID_BYTES = 36;
/** UTF-8 takes at most 3 bytes per UTF-16 unit. */
const MAX_UTF8_PER_UNIT = 3;
const COMMA = 0x2c;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** What a batch needs of one record: its id, its key and time, and its JSON as one text or as the pieces to write in turn. */
interface RecordParts {
  id: string;
  key: number;
  createdMs: number;
  parts: readonly string[];
}

/** The pieces of one record, or the reason it can never be stored. */
function recordParts(execution: ExecutionRecord | SerializedExecution): RecordParts {
  if ('outcomeJson' in execution) return serializedParts(execution);
  if (!isUuidText(execution.execution_id, true)) {
    throw new AppError('VALIDATION_ERROR', `execution id "${execution.execution_id}" is not a lowercase UUID`);
  }
  const key = executionIdKey(execution.execution_id)!;
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
    return { id: execution.execution_id, key, createdMs, parts: [json] };
  } catch (error) {
    // A BigInt or a cycle in the facts.
    throw new AppError('VALIDATION_ERROR', `execution ${execution.execution_id} is not JSON-serializable`, { cause: error });
  }
}

/**
 * A record from texts its caller holds: they are embedded as they are, so nothing is serialized again, and the key is
 * the id's time, known without reading the id. The stored form differs (see readRecord); reading it back does not.
 */
function serializedParts(execution: SerializedExecution): RecordParts {
  const { execution_id: id, createdMs } = execution;
  if (!isUuidText(id, true)) throw new AppError('VALIDATION_ERROR', `execution id "${id}" is not a lowercase UUID`);
  // Its created_at must fit PostgreSQL's timestamptz too (a v7 id can hold times past year 9999).
  if (!(Number.isInteger(createdMs) && createdMs >= 0 && createdMs <= Math.min(LAST_UUID_V7_MS, LAST_STORABLE_MS))) {
    throw new AppError('VALIDATION_ERROR', `execution ${id} has no valid creation time`);
  }
  const domain = execution.domain === null ? 'null' : JSON.stringify(execution.domain);
  const head = `{"source":"${execution.source}","domain":${domain},"created_ms":${createdMs},"request":`;
  return { id, key: createdMs, createdMs, parts: [head, execution.requestJson, ',"outcome":', execution.outcomeJson, '}'] };
}

/**
 * One batch in the making: each record is written at once as UTF-8 into one buffer holding the batch's JSON array, and
 * its id into a second, so a pending record costs the JavaScript heap nothing and the batch is compressed as it stands.
 * Strings kept until their batch was written survived collections and were copied twice more (join, then UTF-8); this
 * cut, with PGlite on its own thread, the event loop's cost of recording to under a third (docs/storage.md).
 */
export class BatchBuffer {
  #bytes: Buffer;
  #ids: Buffer;
  /** Bytes in use: the opening bracket, then each record behind a comma. */
  #length = 1;
  /** End offset (exclusive) of each record, in recording order. */
  #ends: number[] = [];
  #minKey = Number.POSITIVE_INFINITY;
  #maxKey = Number.NEGATIVE_INFINITY;
  #newestMs = Number.NEGATIVE_INFINITY;
  #closed = false;
  #encoded: Promise<EncodedBatch> | undefined;
  readonly #key = randomUUID();

  /**
   * Reuses the buffers of a written batch when given, else allocates `bytes` for the JSON (growing as needed): a batch
   * of 500 typical records fills about 250 KB, and growing a buffer copies it.
   */
  constructor(from: BatchBuffer | { bytes: number } = { bytes: 64 * 1024 }) {
    if (from instanceof BatchBuffer) {
      this.#bytes = from.#bytes;
      this.#ids = from.#ids;
    } else {
      this.#bytes = sharedBuffer(Math.max(from.bytes, 1_024));
      this.#ids = Buffer.allocUnsafe(64 * ID_BYTES);
    }
    this.#bytes[0] = OPEN_BRACKET;
  }

  get count(): number {
    return this.#ends.length;
  }

  /** Bytes its JSON buffer can hold before growing (what the batch keeps reserved, and a batch reusing it too). */
  get capacity(): number {
    return this.#bytes.length;
  }

  /** Bytes of JSON the batch holds so far. */
  get byteLength(): number {
    return this.#length;
  }

  /** Bytes of its records' JSON (and the commas between them): byteLength without the opening bracket. */
  get recordBytes(): number {
    return this.#length - 1;
  }

  /** Adds a record, or throws AppError VALIDATION_ERROR for one that can never be stored (the batch is then unchanged). */
  add(execution: ExecutionRecord | SerializedExecution): void {
    if (this.#closed) throw new Error('a batch being written takes no more records');
    const { id, key, createdMs, parts } = recordParts(execution);
    let units = 1;
    for (const part of parts) units += part.length;
    this.#reserve(units * MAX_UTF8_PER_UNIT + 1);
    let at = this.#length;
    if (this.#ends.length > 0) this.#bytes[at++] = COMMA;
    for (const part of parts) at += this.#bytes.write(part, at, 'utf8');
    this.#length = at;
    const index = this.#ends.length;
    if ((index + 1) * ID_BYTES > this.#ids.length) this.#ids = grown(this.#ids, (index + 1) * ID_BYTES, index * ID_BYTES);
    this.#ids.write(id, index * ID_BYTES, 'latin1');
    this.#ends.push(at);
    if (key < this.#minKey) this.#minKey = key;
    if (key > this.#maxKey) this.#maxKey = key;
    if (createdMs > this.#newestMs) this.#newestMs = createdMs;
  }

  /** The latest record recorded under this id, as the API shows it; undefined when the batch holds none. */
  find(id: string): ExecutionRecord | undefined {
    if (!isUuidText(id)) return undefined;
    // Dashes sit at fixed places in a UUID, so a match of one can only start on a record's boundary; checked anyway.
    for (let from = (this.#ends.length - 1) * ID_BYTES; from >= 0; ) {
      const at = this.#ids.lastIndexOf(id, from, 'latin1');
      if (at < 0) return undefined;
      if (at % ID_BYTES === 0) return readRecord(JSON.parse(this.#recordText(at / ID_BYTES)));
      from = at - 1;
    }
    return undefined;
  }

  /**
   * Closes the batch (no record may follow) and gives what its row needs, for a writer on another thread: the JSON is
   * shared memory, so it reaches that thread without a copy and the batch still finds its records until the row is written.
   */
  contents(): BatchContents {
    const json = this.#closedJson();
    const ends = Buffer.allocUnsafe(this.#ends.length * 4);
    for (const [index, end] of this.#ends.entries()) ends.writeUInt32BE(end, index * 4);
    return {
      json,
      ends,
      key: this.#key,
      count: this.count,
      minKey: this.#minKey,
      maxKey: this.#maxKey,
      newestAt: new Date(this.#newestMs).toISOString(),
    };
  }

  /** Closes the batch and compresses it on the thread pool, once: a batch whose insert failed is retried with the same bytes. */
  encode(): Promise<EncodedBatch> {
    if (this.#encoded === undefined) {
      const { json, ...row } = this.contents();
      this.#encoded = compress(json, COMPRESSION).then((records) => ({ records, ...row }));
    }
    return this.#encoded;
  }

  /** The JSON array, closed by its bracket; no record may follow. */
  #closedJson(): Buffer {
    if (this.#ends.length === 0) throw new RangeError('a batch needs at least one record');
    if (!this.#closed) {
      this.#reserve(1);
      this.#bytes[this.#length] = CLOSE_BRACKET;
      this.#closed = true;
    }
    return this.#bytes.subarray(0, this.#length + 1);
  }

  #recordText(index: number): string {
    const start = recordStart(index, (previous) => this.#ends[previous]!);
    return this.#bytes.toString('utf8', start, this.#ends[index]);
  }

  #reserve(bytes: number): void {
    if (this.#length + bytes > this.#bytes.length) this.#bytes = grown(this.#bytes, this.#length + bytes, this.#length);
  }
}

/** Where record `index` starts in a batch's JSON array: past the opening bracket, or past the comma after the one before. */
function recordStart(index: number, endOf: (index: number) => number): number {
  return index === 0 ? 1 : endOf(index - 1) + 1;
}

/** A record stored from texts (serializedParts): the request holds the facts, the outcome the evaluation. */
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
  return 'outcomeJson' in execution ? readRecord(JSON.parse(serializedParts(execution).parts.join(''))) : execution;
}

/** Compresses records into one batch, as the writer does; throws for a record that can never be stored. */
export async function encodeBatch(executions: readonly (ExecutionRecord | SerializedExecution)[]): Promise<EncodedBatch> {
  const batch = new BatchBuffer();
  for (const execution of executions) batch.add(execution);
  return await batch.encode();
}

/**
 * A buffer over shared memory. Handing a batch to another thread as a copy, or moving a new buffer there, cost the event
 * loop 0.5-0.7 ms per 250 KB batch (fresh pages faulted in), sharing it 0.03 ms.
 */
function sharedBuffer(size: number): Buffer {
  return Buffer.from(new SharedArrayBuffer(size));
}

/** A buffer of at least `size` bytes (doubling), holding the first `used` bytes of `buffer`, shared if `buffer` is. */
function grown(buffer: Buffer, size: number, used: number): Buffer {
  const length = Math.max(size, buffer.length * 2);
  const next = buffer.buffer instanceof SharedArrayBuffer ? sharedBuffer(length) : Buffer.allocUnsafe(length);
  buffer.copy(next, 0, 0, used);
  return next;
}

/** The records of a stored batch, in the order they were written. */
export async function decodeBatch(records: Buffer): Promise<ExecutionRecord[]> {
  const parsed: unknown = JSON.parse((await decompress(records)).toString('utf8'));
  if (!Array.isArray(parsed)) throw new Error('a stored execution batch is not a JSON array');
  return parsed.map(readRecord);
}

/** Compresses a batch's contents on the calling thread: for a writer that has a thread of its own. */
export function compressBatchSync(contents: BatchContents): EncodedBatch {
  const { json, ...row } = contents;
  return { records: brotliCompressSync(json, COMPRESSION), ...row };
}

/**
 * Inserts one batch, once: an insert retried after its answer was lost (it may have committed) adds nothing. The
 * compressed records travel as bytes in binary format (pg sends a Buffer so; PGlite's thread builds the message itself).
 */
export const INSERT_BATCH_SQL = `insert into execution_batches (id_keys, newest_at, record_count, records, batch_key, record_ends)
  values (int8range($1, $2, '[]'), $3, $4, $5, $6, $7)
  on conflict (batch_key) do nothing`;

/** The parameters of INSERT_BATCH_SQL for one batch. */
export function insertBatchParameters(batch: EncodedBatch): [number, number, string, number, Buffer, string, Uint8Array] {
  return [batch.minKey, batch.maxKey, batch.newestAt, batch.count, batch.records, batch.key, batch.ends];
}

export async function insertBatch(db: Kysely<Database>, batch: EncodedBatch): Promise<void> {
  await db.executeQuery(CompiledQuery.raw(INSERT_BATCH_SQL, insertBatchParameters(batch)));
}

/** The latest stored record with this id: a re-recorded id is in several batches, and the newest batch wins. */
export async function findInBatches(db: Kysely<Database>, id: string): Promise<ExecutionRecord | undefined> {
  const key = executionIdKey(id);
  if (key === undefined) return undefined;
  // Read as base64 text: PGlite's JavaScript bytea decoder is far slower than Buffer's.
  const { rows } = await sql<{ records: string; record_ends: string | null }>`
    select encode(records, 'base64') as records, encode(record_ends, 'base64') as record_ends from execution_batches
    where id_keys @> ${key}::bigint order by batch_id desc
  `.execute(db);
  for (const row of rows) {
    const records = Buffer.from(row.records, 'base64');
    const found =
      row.record_ends === null
        ? // The later of two records with one id in a batch is the newer.
          (await decodeBatch(records)).findLast((record) => record.execution_id === id)
        : findInBatchJson(await decompress(records), Buffer.from(row.record_ends, 'base64'), id);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * The last record with this id in a batch's JSON, parsing only records that mention the id: found by the id's text,
 * then the record holding it by its end offset. A fact may mention another record's id, so each candidate is checked.
 */
export function findInBatchJson(json: Buffer, ends: Buffer, id: string): ExecutionRecord | undefined {
  const count = ends.length / 4;
  const endOf = (index: number): number => ends.readUInt32BE(index * 4);
  const needle = `"${id}"`;
  for (let from = json.length; from > 0; ) {
    const at = json.lastIndexOf(needle, from - 1, 'latin1');
    if (at < 0) return undefined;
    // The first record ending after the match holds it.
    let low = 0;
    let high = count - 1;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (endOf(middle) <= at) low = middle + 1;
      else high = middle;
    }
    const start = recordStart(low, endOf);
    const record = readRecord(JSON.parse(json.toString('utf8', start, endOf(low))));
    if (record.execution_id === id) return record;
    from = start;
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
