// Maps execution records to rows and back, and writes a batch in one multi-row INSERT.
import type { Insertable, Kysely, Selectable } from 'kysely';
import { AppError } from '../errors.ts';
import type { Database, ExecutionsTable } from './database.ts';
import type { ExecutionRecord } from './types.ts';

const COLUMNS_PER_ROW = 9;
/** PostgreSQL's bind-parameter limit per statement. */
const MAX_PARAMETERS = 65_535;
/** The most rows one INSERT can carry without passing the parameter limit. */
export const MAX_ROWS_PER_INSERT = Math.floor(MAX_PARAMETERS / COLUMNS_PER_ROW);

const SOURCES: readonly ExecutionRecord['source'][] = ['http', 'bulk', 'kafka', 'session'];

/** Upserts the batch by id, so retrying a batch whose commit was lost is harmless and a re-recorded id keeps its latest record. */
export async function insertExecutions(db: Kysely<Database>, batch: readonly ExecutionRecord[]): Promise<void> {
  if (batch.length === 0) return;
  if (batch.length > MAX_ROWS_PER_INSERT) throw new RangeError(`at most ${MAX_ROWS_PER_INSERT} executions fit one INSERT`);
  await db
    .insertInto('executions')
    .values(batch.map(toExecutionRow))
    .onConflict((conflict) =>
      conflict.column('execution_id').doUpdateSet((eb) => ({
        source: eb.ref('excluded.source'),
        domain: eb.ref('excluded.domain'),
        facts: eb.ref('excluded.facts'),
        fired_rules: eb.ref('excluded.fired_rules'),
        actions: eb.ref('excluded.actions'),
        latency_ms: eb.ref('excluded.latency_ms'),
        revision: eb.ref('excluded.revision'),
        created_at: eb.ref('excluded.created_at'),
      })),
    )
    .execute();
}

function toExecutionRow(execution: ExecutionRecord): Insertable<ExecutionsTable> {
  try {
    return {
      execution_id: execution.execution_id,
      source: execution.source,
      domain: execution.domain,
      facts: JSON.stringify(execution.facts ?? null),
      fired_rules: JSON.stringify(execution.fired_rules),
      actions: JSON.stringify(execution.actions),
      latency_ms: execution.latency_ms,
      revision: execution.revision,
      created_at: execution.created_at,
    };
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
