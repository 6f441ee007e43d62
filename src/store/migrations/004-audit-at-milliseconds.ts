// An audit entry's time is hashed as ISO 8601 with milliseconds: finer digits would be an edit verify cannot see.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  // Every entry so far was written from an ISO time with milliseconds, so none breaks the check.
  await sql`alter table audit_log add constraint audit_log_at_milliseconds check (at = date_trunc('milliseconds', at))`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table audit_log drop constraint audit_log_at_milliseconds`.execute(db);
}
