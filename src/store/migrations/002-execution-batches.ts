// Executions move from one row each to compressed batches: a row per execution cost more to insert than evaluating it.
import { type Kysely, sql } from 'kysely';
import { decodeBatch, type EncodedBatch, encodeBatch, executionIdKey } from '../execution-batches.ts';
import type { ExecutionRecord } from '../types.ts';

/** Rows moved per batch while migrating. */
const MOVE_BATCH = 500;

interface ExecutionRow {
  execution_id: string;
  source: ExecutionRecord['source'];
  domain: string | null;
  facts: unknown;
  fired_rules: number[];
  actions: string[];
  latency_ms: number;
  revision: string | number;
  created_at: Date | string;
}

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('execution_batches')
    .addColumn('batch_id', 'bigint', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('id_keys', sql`int8range`, (c) => c.notNull())
    .addColumn('newest_at', 'timestamptz', (c) => c.notNull())
    .addColumn('record_count', 'integer', (c) => c.notNull().check(sql`record_count > 0`))
    .addColumn('records', 'bytea', (c) => c.notNull())
    .execute();
  // GET /executions/{id} asks which batches' key ranges hold the id's key; retention deletes by age.
  await db.schema.createIndex('execution_batches_id_keys_idx').on('execution_batches').using('gist').column('id_keys').execute();
  await db.schema.createIndex('execution_batches_newest_at_idx').on('execution_batches').column('newest_at').execute();

  // Existing executions move over in id order, so batches keep narrow key ranges.
  let after = '';
  for (;;) {
    const { rows } = await sql<ExecutionRow>`
      select * from executions where execution_id > ${after} order by execution_id limit ${MOVE_BATCH}
    `.execute(db);
    if (rows.length === 0) break;
    after = rows[rows.length - 1]!.execution_id;
    // The service only ever made UUID ids, and GET /executions/{id} accepts nothing else, so another id was never readable.
    const records = rows.map(toRecord).filter((record) => executionIdKey(record.execution_id) !== undefined);
    if (records.length > 0) await insertMovedBatch(db, await encodeBatch(records));
  }
  await db.schema.dropTable('executions').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table executions (
      execution_id text primary key,
      source text not null check (source in ('http', 'bulk', 'kafka', 'session')),
      domain text, facts jsonb not null, fired_rules jsonb not null, actions jsonb not null,
      latency_ms double precision not null, revision bigint not null, created_at timestamptz not null)
  `.execute(db);
  await sql`create index executions_created_at_idx on executions (created_at)`.execute(db);
  const { rows } = await sql<{ records: string }>`
    select encode(records, 'base64') as records from execution_batches order by batch_id
  `.execute(db);
  for (const row of rows) {
    const document = JSON.stringify(await decodeBatch(Buffer.from(row.records, 'base64')));
    // Later batches hold the latest record of a re-recorded id.
    await sql`
      insert into executions
      select execution_id, source, domain, coalesce(facts, 'null'::jsonb), fired_rules, actions, latency_ms, revision, created_at
      from jsonb_to_recordset(${document}::jsonb) as batch(
        execution_id text, source text, domain text, facts jsonb, fired_rules jsonb, actions jsonb,
        latency_ms double precision, revision bigint, created_at timestamptz)
      on conflict (execution_id) do update set
        source = excluded.source, domain = excluded.domain, facts = excluded.facts, fired_rules = excluded.fired_rules,
        actions = excluded.actions, latency_ms = excluded.latency_ms, revision = excluded.revision, created_at = excluded.created_at
    `.execute(db);
  }
  await db.schema.dropTable('execution_batches').execute();
}

/** The batch insert as this migration's table has it (later migrations add columns the service's insert fills). */
async function insertMovedBatch(db: Kysely<unknown>, batch: EncodedBatch): Promise<void> {
  await sql`
    insert into execution_batches (id_keys, newest_at, record_count, records)
    values (int8range(${batch.minKey}, ${batch.maxKey}, '[]'), ${batch.newestAt}, ${batch.count}, decode(${batch.records.toString('base64')}, 'base64'))
  `.execute(db);
}

function toRecord(row: ExecutionRow): ExecutionRecord {
  return {
    execution_id: row.execution_id,
    source: row.source,
    domain: row.domain,
    facts: row.facts,
    fired_rules: row.fired_rules,
    actions: row.actions,
    latency_ms: row.latency_ms,
    revision: Number(row.revision),
    created_at: new Date(row.created_at).toISOString(),
  };
}
