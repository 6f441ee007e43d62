// Maps between rule drafts, rows and the StoredRule every caller sees.
import type { Insertable, Selectable } from 'kysely';
import { inDocumentedOrder } from '../contracts/condition-dsl.ts';
import { DEFAULT_DOMAIN } from '../contracts/rule.ts';
import type { RulesTable } from './database.ts';
import type { RuleDraft, StoredRule } from './types.ts';

/** Every writable rule field with its default filled in. */
export type RuleFields = Required<Omit<RuleDraft, 'description'>> & { description: string | null };

export function fieldsOf(draft: RuleDraft): RuleFields {
  return {
    name: draft.name,
    domain: draft.domain ?? DEFAULT_DOMAIN,
    condition_dsl: draft.condition_dsl,
    action: draft.action,
    priority: draft.priority ?? 0,
    enabled: draft.enabled ?? true,
    description: draft.description ?? null,
    tags: draft.tags ?? [],
  };
}

/** PATCH semantics: a field left undefined keeps its value; description null clears it. */
export function patchedFields(current: StoredRule, patch: Partial<RuleDraft>): RuleFields {
  return {
    name: patch.name ?? current.name,
    domain: patch.domain ?? current.domain,
    condition_dsl: patch.condition_dsl ?? current.condition_dsl,
    action: patch.action ?? current.action,
    priority: patch.priority ?? current.priority,
    enabled: patch.enabled ?? current.enabled,
    description: patch.description === undefined ? (current.description ?? null) : patch.description,
    tags: patch.tags ?? current.tags ?? [],
  };
}

export function ruleColumns(fields: RuleFields): Omit<Insertable<RulesTable>, 'version' | 'created_at' | 'updated_at'> {
  return { ...fields, condition_dsl: JSON.stringify(fields.condition_dsl), tags: JSON.stringify(fields.tags) };
}

export function toStoredRule(row: Selectable<RulesTable>): StoredRule {
  return {
    id: row.id,
    name: row.name,
    domain: row.domain,
    condition_dsl: inDocumentedOrder(row.condition_dsl),
    action: row.action,
    priority: row.priority,
    enabled: row.enabled,
    // The Rule contract has an optional description, never null.
    ...(row.description === null ? {} : { description: row.description }),
    tags: row.tags,
    version: row.version,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** A rule snapshot read back from JSON storage (a version's), with its fields and condition in the documented order. */
export function snapshotInOrder(rule: StoredRule): StoredRule {
  return {
    id: rule.id,
    name: rule.name,
    domain: rule.domain,
    condition_dsl: inDocumentedOrder(rule.condition_dsl),
    action: rule.action,
    priority: rule.priority,
    enabled: rule.enabled,
    ...(rule.description === undefined ? {} : { description: rule.description }),
    ...(rule.tags === undefined ? {} : { tags: rule.tags }),
    version: rule.version,
    created_at: rule.created_at,
    updated_at: rule.updated_at,
  };
}
