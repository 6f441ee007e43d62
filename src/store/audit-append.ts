// Appends one audit entry chained to the last one; callers hold the store_revision row lock, so appends are serialized.
import type { Transaction } from 'kysely';
import { type AuditContent, auditHash, GENESIS_HASH } from './audit-hash.ts';
import type { Database } from './database.ts';

export async function appendAudit(trx: Transaction<Database>, entry: AuditContent): Promise<void> {
  // Absent before/after are stored as SQL NULL and read back as null: hash exactly what verify() will read.
  const content = { ...entry, before: entry.before ?? null, after: entry.after ?? null };
  const last = await trx.selectFrom('audit_log').select('hash').orderBy('id', 'desc').limit(1).executeTakeFirst();
  const prevHash = last?.hash ?? GENESIS_HASH;
  await trx
    .insertInto('audit_log')
    .values({
      at: content.at,
      actor: content.actor,
      action: content.action,
      entity_type: content.entity_type,
      entity_id: content.entity_id,
      before: toJsonText(content.before),
      after: toJsonText(content.after),
      prev_hash: prevHash,
      hash: auditHash(prevHash, content),
    })
    .execute();
}

function toJsonText(value: unknown): string | null {
  return value === null ? null : JSON.stringify(value);
}
