// Every migration, in order: a static list so the service needs no migrations folder on disk at run time.
import type { Migration } from 'kysely/migration';
import * as initial from './001-initial.ts';
import * as executionBatches from './002-execution-batches.ts';
import * as batchKeys from './003-batch-keys.ts';
import * as auditAtMilliseconds from './004-audit-at-milliseconds.ts';
import * as batchRecordEnds from './005-batch-record-ends.ts';
import * as batchRecordsExternal from './006-batch-records-external.ts';

export const migrations: Record<string, Migration> = {
  '001-initial': initial,
  '002-execution-batches': executionBatches,
  '003-batch-keys': batchKeys,
  '004-audit-at-milliseconds': auditAtMilliseconds,
  '005-batch-record-ends': batchRecordEnds,
  '006-batch-records-external': batchRecordsExternal,
};
