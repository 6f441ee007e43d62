// Each execution batch carries a key of its own, so an insert retried after its answer was lost adds nothing twice.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('execution_batches').addColumn('batch_key', 'uuid').execute();
  // Batches written before this migration have none; a unique index lets any number of NULLs be.
  await db.schema.createIndex('execution_batches_batch_key_idx').on('execution_batches').column('batch_key').unique().execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index execution_batches_batch_key_idx`.execute(db);
  await db.schema.alterTable('execution_batches').dropColumn('batch_key').execute();
}
