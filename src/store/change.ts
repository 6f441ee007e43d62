// One change to rules or rulesets = one transaction: revision bump, the row change, its audit entry.
import { type Kysely, sql, type Transaction } from 'kysely';
import { appendAudit } from './audit-append.ts';
import type { Database } from './database.ts';
import { withDatabase } from './database-errors.ts';
import type { AuditAction, AuditEntityType, Change } from './types.ts';

export interface ChangeContext {
  trx: Transaction<Database>;
  /**
   * The change's timestamp: the database's clock, read under the revision lock and never before the last audit entry's,
   * so audit times follow chain order whatever the instances' own clocks say.
   */
  at: Date;
  revision: number;
}

export interface ChangeOutcome<T> {
  value: T;
  audit: { action: AuditAction; entity_type: AuditEntityType; entity_id: number; before: unknown; after: unknown };
}

const NOTHING_TO_CHANGE = Symbol('nothing to change');

/**
 * Runs `work` in a transaction that first bumps the store revision (its row lock serializes every writer, so the audit
 * chain cannot fork) and then appends the audit entry. `work` returning undefined rolls everything back.
 */
export async function runChange<T>(
  db: Kysely<Database>,
  actor: string,
  work: (context: ChangeContext) => Promise<ChangeOutcome<T> | undefined>,
): Promise<Change<T> | undefined> {
  try {
    return await withDatabase(() =>
      db.transaction().execute(async (trx) => {
        const { revision, at } = await bumpRevision(trx);
        const outcome = await work({ trx, at, revision });
        if (outcome === undefined) throw NOTHING_TO_CHANGE;
        await appendAudit(trx, { ...outcome.audit, at: at.toISOString(), actor });
        return { value: outcome.value, revision };
      }),
    );
  } catch (error) {
    if (error === NOTHING_TO_CHANGE) return undefined;
    throw error;
  }
}

async function bumpRevision(trx: Transaction<Database>): Promise<{ revision: number; at: Date }> {
  const row = await trx
    .updateTable('store_revision')
    .set({ revision: sql<number>`revision + 1` })
    .where('id', '=', 1)
    .returning('revision')
    .executeTakeFirstOrThrow();
  // A statement of its own, once the lock is held: its snapshot sees the entry the previous holder committed.
  // Milliseconds, as the audit hash holds them (toISOString).
  const { rows } = await sql<{ at: Date | string }>`select greatest(date_trunc('milliseconds', clock_timestamp()),
    (select at from audit_log order by id desc limit 1)) as at`.execute(trx);
  return { revision: Number(row.revision), at: new Date((rows[0] as { at: Date | string }).at) };
}

export async function readRevision(db: Kysely<Database>): Promise<number> {
  const row = await db.selectFrom('store_revision').select('revision').where('id', '=', 1).executeTakeFirstOrThrow();
  return Number(row.revision);
}
