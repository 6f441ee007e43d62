// The audit chain's hash: SHA-256 hex over the previous hash followed by the canonical JSON of the entry's content.
import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical-json.ts';
import type { AuditEntry } from './types.ts';

/** The prev_hash of the first entry. */
export const GENESIS_HASH = '0'.repeat(64);

export type AuditContent = Pick<AuditEntry, 'at' | 'actor' | 'action' | 'entity_type' | 'entity_id' | 'before' | 'after'>;

export function auditHash(prevHash: string, content: AuditContent): string {
  const { at, actor, action, entity_type, entity_id, before, after } = content;
  const body = canonicalJson({ at, actor, action, entity_type, entity_id, before, after });
  return createHash('sha256').update(prevHash).update(body).digest('hex');
}
