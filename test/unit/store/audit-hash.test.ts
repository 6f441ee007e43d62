import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { type AuditContent, auditHash, GENESIS_HASH } from '../../../src/store/audit-hash.ts';

const entry: AuditContent = {
  at: '2024-01-02T03:04:05.678Z',
  actor: 'alice',
  action: 'create',
  entity_type: 'rule',
  entity_id: 7,
  before: null,
  after: { name: 'n', id: 7 },
};

describe('auditHash', () => {
  it('is SHA-256 hex over the previous hash and the sorted-key JSON of the entry', () => {
    const body =
      '{"action":"create","actor":"alice","after":{"id":7,"name":"n"},"at":"2024-01-02T03:04:05.678Z","before":null,"entity_id":7,"entity_type":"rule"}';
    expect(auditHash(GENESIS_HASH, entry)).toBe(
      createHash('sha256')
        .update(`${'0'.repeat(64)}${body}`)
        .digest('hex'),
    );
  });

  it('changes with the previous hash and with any field', () => {
    const base = auditHash(GENESIS_HASH, entry);
    expect(auditHash('1'.repeat(64), entry)).not.toBe(base);
    expect(auditHash(GENESIS_HASH, { ...entry, actor: 'mallory' })).not.toBe(base);
    expect(auditHash(GENESIS_HASH, { ...entry, after: { name: 'n', id: 8 } })).not.toBe(base);
  });

  it('ignores key order and fields outside the hashed content', () => {
    const reordered: AuditContent = {
      after: { id: 7, name: 'n' },
      before: null,
      entity_id: 7,
      entity_type: 'rule',
      action: 'create',
      actor: 'alice',
      at: entry.at,
    };
    expect(auditHash(GENESIS_HASH, reordered)).toBe(auditHash(GENESIS_HASH, entry));
    expect(auditHash(GENESIS_HASH, { ...entry, id: 99, hash: 'x' } as AuditContent)).toBe(auditHash(GENESIS_HASH, entry));
  });
});
