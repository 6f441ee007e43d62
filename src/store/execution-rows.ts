// Maps execution records to rows and back, and writes a batch as one JSON document expanded by the database.
import { type Kysely, type Selectable, sql } from 'kysely';
import { AppError } from '../errors.ts';
import type { Database, ExecutionsTable } from './database.ts';
import type { ExecutionRecord } from './types.ts';

/** Bounds one statement's size (a recorded fact is at most the request body limit). */
export const MAX_ROWS_PER_INSERT = 5_000;

const SOURCES: readonly ExecutionRecord['source'][] = ['http', 'bulk', 'kafka', 'session'];

/**
 * Upserts the batch by id, so retrying a batch whose commit was lost is harmless and a re-recorded id keeps its latest record.
 * The batch travels as one jsonb parameter: a native JSON.stringify costs the request thread far less than binding nine
 * parameters per row, and the database parses it in one pass.
 */
export async function insertExecutions(db: Kysely<Database>, batch: readonly ExecutionRecord[]): Promise<void> {
  if (batch.length === 0) return;
  if (batch.length > MAX_ROWS_PER_INSERT) throw new RangeError(`at most ${MAX_ROWS_PER_INSERT} executions fit one INSERT`);
  const document = `[${batch.map(toExecutionJson).join(',')}]`;
  await sql`
    insert into executions (execution_id, source, domain, facts, fired_rules, actions, latency_ms, revision, created_at)
    select execution_id, source, domain, coalesce(facts, 'null'::jsonb), fired_rules, actions, latency_ms, revision, created_at
    from jsonb_to_recordset(${document}::jsonb) as batch(
      execution_id text, source text, domain text, facts jsonb, fired_rules jsonb, actions jsonb,
      latency_ms double precision, revision bigint, created_at timestamptz)
    on conflict (execution_id) do update set
      source = excluded.source, domain = excluded.domain, facts = excluded.facts, fired_rules = excluded.fired_rules,
      actions = excluded.actions, latency_ms = excluded.latency_ms, revision = excluded.revision, created_at = excluded.created_at
  `.execute(db);
}

function toExecutionJson(execution: ExecutionRecord): string {
  try {
    return JSON.stringify({
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
  } catch (error) {
    // A BigInt or a cycle in the facts: this record can never be written.
    throw new AppError('VALIDATION_ERROR', `execution ${execution.execution_id} is not JSON-serializable`, { cause: error });
  }
}

export function toExecutionRecord(row: Selectable<ExecutionsTable>): ExecutionRecord {
  const source = SOURCES.find((candidate) => candidate === row.source);
  if (source === undefined) throw new Error(`unexpected source "${row.source}" in executions`);
  return {
    execution_id: row.execution_id,
    source,
    domain: row.domain,
    facts: row.facts,
    fired_rules: row.fired_rules,
    actions: row.actions,
    latency_ms: row.latency_ms,
    revision: Number(row.revision),
    created_at: row.created_at.toISOString(),
  };
}
