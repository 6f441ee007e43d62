// Reads the audit trail and re-checks its hash chain.
import type { Kysely, Selectable } from 'kysely';
import { AppError } from '../errors.ts';
import { auditHash, GENESIS_HASH } from './audit-hash.ts';
import { decodeCursor, pageLimit, toPage } from './cursor.ts';
import type { AuditLogTable, Database } from './database.ts';
import { withDatabase } from './database-errors.ts';
import { isRowId } from './row-id.ts';
import type { AuditAction, AuditEntityType, AuditEntry, AuditRepository } from './types.ts';

/** How many entries verify() reads per query, so a long chain is streamed rather than loaded whole. */
const VERIFY_PAGE = 1_000;

export function createAuditRepository(db: Kysely<Database>): AuditRepository {
  return {
    list: (filter) =>
      withDatabase(async () => {
        const limit = pageLimit(filter.limit);
        let query = db.selectFrom('audit_log').selectAll();
        if (filter.entity_type !== undefined) query = query.where('entity_type', '=', filter.entity_type);
        if (filter.entity_id !== undefined) {
          if (!isRowId(filter.entity_id)) return { items: [], next_cursor: null };
          query = query.where('entity_id', '=', filter.entity_id);
        }
        if (filter.action !== undefined) query = query.where('action', '=', filter.action);
        if (filter.since !== undefined) query = query.where('at', '>=', validDate(filter.since, 'since'));
        if (filter.until !== undefined) query = query.where('at', '<', validDate(filter.until, 'until'));
        if (filter.cursor !== undefined) query = query.where('id', '<', decodeCursor('audit', filter.cursor));
        const rows = await query
          .orderBy('id', 'desc')
          .limit(limit + 1)
          .execute();
        return toPage('audit', rows.map(toAuditEntry), limit, (entry) => entry.id);
      }),

    verify: () =>
      withDatabase(async () => {
        let prevHash = GENESIS_HASH;
        let afterId = 0;
        let entries = 0;
        for (;;) {
          const rows = await db
            .selectFrom('audit_log')
            .selectAll()
            .where('id', '>', afterId)
            .orderBy('id', 'asc')
            .limit(VERIFY_PAGE)
            .execute();
          for (const row of rows) {
            const entry = toAuditEntry(row);
            entries += 1;
            if (entry.prev_hash !== prevHash || entry.hash !== auditHash(prevHash, entry)) {
              return { valid: false, entries, first_invalid_id: entry.id };
            }
            prevHash = entry.hash;
            afterId = entry.id;
          }
          if (rows.length < VERIFY_PAGE) return { valid: true, entries };
        }
      }),
  };
}

function toAuditEntry(row: Selectable<AuditLogTable>): AuditEntry {
  return {
    id: Number(row.id),
    at: row.at.toISOString(),
    actor: row.actor,
    action: oneOf(row.action, AUDIT_ACTIONS),
    entity_type: oneOf(row.entity_type, AUDIT_ENTITY_TYPES),
    entity_id: row.entity_id,
    before: row.before,
    after: row.after,
    prev_hash: row.prev_hash,
    hash: row.hash,
  };
}

function validDate(date: Date, name: string): Date {
  if (Number.isNaN(date.getTime())) throw new AppError('VALIDATION_ERROR', `${name} must be a valid date`);
  return date;
}

const AUDIT_ACTIONS: readonly AuditAction[] = ['create', 'update', 'delete'];
const AUDIT_ENTITY_TYPES: readonly AuditEntityType[] = ['rule', 'ruleset'];

// The table's CHECK constraints allow only these values; anything else is a corrupted row.
function oneOf<T extends string>(value: string, allowed: readonly T[]): T {
  const found = allowed.find((candidate) => candidate === value);
  if (found === undefined) throw new Error(`unexpected value "${value}" in audit_log`);
  return found;
}
