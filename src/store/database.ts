// The SQL schema as Kysely sees it: JSON columns are written as JSON text and read back parsed.
import type { ColumnType, Generated } from 'kysely';
import type { ConditionNode } from '../contracts/condition-dsl.ts';
import type { StoredRule } from './types.ts';

/** A jsonb column: selected parsed, inserted and updated as JSON text (pg would turn a JS array into a PG array). */
type Json<T> = ColumnType<T, string, string>;
/** A timestamptz column: selected as a Date, written as a Date or an ISO 8601 string. */
type Timestamp = ColumnType<Date, Date | string, Date | string>;
/** A bigint column: pg selects it as a string, PGlite as a number; the repositories normalize it. */
type BigInt8 = ColumnType<string | number, number, number>;

export interface RulesTable {
  id: Generated<number>;
  name: string;
  domain: string;
  condition_dsl: Json<ConditionNode>;
  action: string;
  priority: number;
  enabled: boolean;
  description: string | null;
  tags: Json<string[]>;
  version: number;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface RuleVersionsTable {
  rule_id: number;
  version: number;
  change: 'create' | 'update' | 'delete';
  snapshot: Json<StoredRule>;
  changed_at: Timestamp;
  actor: string;
}

export interface RulesetsTable {
  id: Generated<number>;
  name: string;
  domain: string;
  description: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** Executions, a compressed batch per row (see execution-batches.ts). */
export interface ExecutionBatchesTable {
  batch_id: Generated<string | number>;
  /** int8range of the 48-bit keys at the front of the batch's execution ids. */
  id_keys: ColumnType<string, never, never>;
  newest_at: Timestamp;
  record_count: number;
  /** The records' JSON array, Brotli-compressed. */
  records: ColumnType<Buffer | Uint8Array, never, never>;
  /** Unique per written batch (null for batches from before it existed): a retried insert of it adds nothing. */
  batch_key: ColumnType<string | null, never, never>;
  /** Where each record's JSON ends in the decompressed array, as 32-bit big-endian offsets (null before it existed). */
  record_ends: ColumnType<Buffer | Uint8Array | null, never, never>;
}

export interface AuditLogTable {
  id: ColumnType<string | number, never, never>;
  at: Timestamp;
  actor: string;
  action: string;
  entity_type: string;
  entity_id: number;
  /** SQL NULL when there is no before (create) or after (delete). */
  before: ColumnType<unknown, string | null, never>;
  after: ColumnType<unknown, string | null, never>;
  prev_hash: string;
  hash: string;
}

export interface StoreRevisionTable {
  id: number;
  revision: BigInt8;
}

export interface Database {
  rules: RulesTable;
  rule_versions: RuleVersionsTable;
  rulesets: RulesetsTable;
  execution_batches: ExecutionBatchesTable;
  audit_log: AuditLogTable;
  store_revision: StoreRevisionTable;
}
