// Batch records are stored as they come: they are Brotli output already, and PostgreSQL's own compression of them only cost CPU.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  // EXTERNAL: moved out of line when large, never compressed. Trying pglz on a 1,000-record batch cost PGlite 0.6-0.8 ms
  // of CPU per insert (a third of the insert) and saved nothing. Only the column's setting changes: no row is rewritten.
  await sql`alter table execution_batches alter column records set storage external`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table execution_batches alter column records set storage extended`.execute(db);
}
