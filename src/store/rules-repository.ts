// Rules in SQL: every mutation writes the row, a rule_versions row, an audit entry and the revision bump in one transaction.
import { type Kysely, sql, type Transaction } from 'kysely';
import { AppError } from '../errors.ts';
import { type ChangeOutcome, readRevision, runChange } from './change.ts';
import { decodeCursor, pageLimit, toPage } from './cursor.ts';
import type { Database } from './database.ts';
import { isUniqueViolation, withDatabase } from './database-errors.ts';
import { isRowId, MAX_ROW_ID } from './row-id.ts';
import { fieldsOf, patchedFields, type RuleFields, ruleColumns, snapshotInOrder, toStoredRule } from './rule-rows.ts';
import type { AuditAction, Change, RulesRepository, StoredRule, VersionCondition } from './types.ts';

export function createRulesRepository(db: Kysely<Database>): RulesRepository {
  /** Rewrites an existing rule with the fields computed from its current state; undefined when it does not exist. */
  async function rewrite(
    id: number,
    actor: string,
    ifVersion: VersionCondition | undefined,
    next: (current: StoredRule) => RuleFields,
  ): Promise<Change<StoredRule> | undefined> {
    let fields: RuleFields | undefined;
    try {
      return await runChange(db, actor, async ({ trx, at }) => {
        const current = await findRule(trx, id);
        if (current === undefined) return undefined;
        checkVersion(current, ifVersion);
        fields = next(current);
        const row = await trx
          .updateTable('rules')
          .set({ ...ruleColumns(fields), version: current.version + 1, updated_at: at })
          .where('id', '=', id)
          .returningAll()
          .executeTakeFirstOrThrow();
        const rule = toStoredRule(row);
        await addVersion(trx, rule, 'update', at, actor);
        return ruleChange('update', id, current, rule, rule);
      });
    } catch (error) {
      throw fields === undefined ? error : nameConflict(error, fields);
    }
  }

  return {
    async create(draft, actor) {
      const fields = fieldsOf(draft);
      try {
        const change = await runChange(db, actor, async ({ trx, at }) => {
          const row = await trx
            .insertInto('rules')
            .values({ ...ruleColumns(fields), version: 1, created_at: at, updated_at: at })
            .returningAll()
            .executeTakeFirstOrThrow();
          const rule = toStoredRule(row);
          await addVersion(trx, rule, 'create', at, actor);
          return ruleChange('create', rule.id, null, rule, rule);
        });
        if (change === undefined) throw new Error('rule create produced no change');
        return change;
      } catch (error) {
        throw nameConflict(error, fields);
      }
    },

    get: (id) => withDatabase(() => findRule(db, id)),

    list: (filter) =>
      withDatabase(async () => {
        const limit = pageLimit(filter.limit);
        let query = db.selectFrom('rules').selectAll();
        if (filter.domain !== undefined) query = query.where('domain', '=', filter.domain);
        if (filter.enabled !== undefined) query = query.where('enabled', '=', filter.enabled);
        // jsonb containment: the rule's tags array holds this tag (served by the GIN index).
        if (filter.tag !== undefined) query = query.where(sql<boolean>`tags @> ${JSON.stringify([filter.tag])}::text::jsonb`);
        if (filter.cursor !== undefined) query = query.where('id', '>', Math.min(decodeCursor('rules', filter.cursor), MAX_ROW_ID));
        const rows = await query
          .orderBy('id', 'asc')
          .limit(limit + 1)
          .execute();
        return toPage('rules', rows.map(toStoredRule), limit, (rule) => rule.id);
      }),

    all: () =>
      withDatabase(async () => {
        const rows = await db.selectFrom('rules').selectAll().orderBy('id', 'asc').execute();
        return rows.map(toStoredRule);
      }),

    snapshot: () =>
      withDatabase(() =>
        // Repeatable read: a change committing between the two reads would label newer rules with an older revision.
        db
          .transaction()
          .setIsolationLevel('repeatable read')
          .execute(async (trx) => {
            const revision = await readRevision(trx);
            const rows = await trx.selectFrom('rules').selectAll().orderBy('id', 'asc').execute();
            return { revision, rules: rows.map(toStoredRule) };
          }),
      ),

    replace: (id, draft, actor, ifVersion) => rewrite(id, actor, ifVersion, () => fieldsOf(draft)),

    update: (id, patch, actor, ifVersion) => rewrite(id, actor, ifVersion, (current) => patchedFields(current, patch)),

    delete: (id, actor, ifVersion) =>
      runChange(db, actor, async ({ trx, at }) => {
        const current = await findRule(trx, id);
        if (current === undefined) return undefined;
        checkVersion(current, ifVersion);
        await trx.deleteFrom('rules').where('id', '=', id).execute();
        // The history outlives the row: a last version records who deleted it and when.
        await addVersion(trx, { ...current, version: current.version + 1, updated_at: at.toISOString() }, 'delete', at, actor);
        return ruleChange('delete', id, current, null, true as const);
      }),

    versions: (id) =>
      withDatabase(async () => {
        if (!isRowId(id)) return undefined;
        const rows = await db.selectFrom('rule_versions').selectAll().where('rule_id', '=', id).orderBy('version', 'asc').execute();
        if (rows.length === 0) return undefined;
        return rows.map((row) => ({
          rule_id: row.rule_id,
          version: row.version,
          change: row.change,
          rule: snapshotInOrder(row.snapshot),
          changed_at: row.changed_at.toISOString(),
          actor: row.actor,
        }));
      }),

    revision: () => withDatabase(() => readRevision(db)),
  };
}

async function findRule(db: Kysely<Database> | Transaction<Database>, id: number): Promise<StoredRule | undefined> {
  if (!isRowId(id)) return undefined;
  const row = await db.selectFrom('rules').selectAll().where('id', '=', id).executeTakeFirst();
  return row === undefined ? undefined : toStoredRule(row);
}

async function addVersion(trx: Transaction<Database>, rule: StoredRule, change: AuditAction, at: Date, actor: string): Promise<void> {
  await trx
    .insertInto('rule_versions')
    .values({ rule_id: rule.id, version: rule.version, change, snapshot: JSON.stringify(rule), changed_at: at, actor })
    .execute();
}

function ruleChange<T>(action: AuditAction, id: number, before: StoredRule | null, after: StoredRule | null, value: T): ChangeOutcome<T> {
  return { value, audit: { action, entity_type: 'rule', entity_id: id, before, after } };
}

function nameConflict(error: unknown, fields: RuleFields): unknown {
  if (!isUniqueViolation(error, 'rules_domain_name_key')) return error;
  return new AppError('CONFLICT', `a rule named "${fields.name}" already exists in domain "${fields.domain}"`, { cause: error });
}

/** PRECONDITION_FAILED when the rule is not at one of the versions the caller's change was made against. */
function checkVersion(current: StoredRule, ifVersion: VersionCondition | undefined): void {
  if (ifVersion === undefined || ifVersion.includes(current.version)) return;
  const named = ifVersion.length === 0 ? 'no version it holds' : `version ${ifVersion.join(' or ')}`;
  throw new AppError(
    'PRECONDITION_FAILED',
    `rule ${current.id} is at version ${current.version}, and If-Match names ${named}: read it again and reapply the change`,
  );
}
