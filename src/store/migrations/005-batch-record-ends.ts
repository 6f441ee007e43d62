// Each execution batch keeps where every record ends in its JSON, so a lookup parses the one record it wants, not the batch.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  // Batches written before this migration have none and are read whole, as before.
  await db.schema.alterTable('execution_batches').addColumn('record_ends', 'bytea').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('execution_batches').dropColumn('record_ends').execute();
}
