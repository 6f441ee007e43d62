// Rulesets in SQL: named views of one domain's rules; each create is audited and bumps the store revision.
import type { Kysely, Selectable } from 'kysely';
import { AppError } from '../errors.ts';
import { runChange } from './change.ts';
import { decodeCursor, pageLimit, toPage } from './cursor.ts';
import type { Database, RulesetsTable } from './database.ts';
import { isUniqueViolation, withDatabase } from './database-errors.ts';
import { isRowId, MAX_ROW_ID } from './row-id.ts';
import type { Ruleset, RulesetsRepository } from './types.ts';

export function createRulesetsRepository(db: Kysely<Database>): RulesetsRepository {
  return {
    async create(draft, actor) {
      try {
        const change = await runChange(db, actor, async ({ trx, at }) => {
          const row = await trx
            .insertInto('rulesets')
            .values({ name: draft.name, domain: draft.domain, description: draft.description ?? null, created_at: at, updated_at: at })
            .returningAll()
            .executeTakeFirstOrThrow();
          const ruleset = toRuleset(row);
          return {
            value: ruleset,
            audit: { action: 'create', entity_type: 'ruleset', entity_id: ruleset.id, before: null, after: ruleset },
          };
        });
        if (change === undefined) throw new Error('ruleset create produced no change');
        return change;
      } catch (error) {
        if (!isUniqueViolation(error, 'rulesets_name_key')) throw error;
        throw new AppError('CONFLICT', `a ruleset named "${draft.name}" already exists`, { cause: error });
      }
    },

    get: (id) =>
      withDatabase(async () => {
        if (!isRowId(id)) return undefined;
        const row = await db.selectFrom('rulesets').selectAll().where('id', '=', id).executeTakeFirst();
        return row === undefined ? undefined : toRuleset(row);
      }),

    list: (filter) =>
      withDatabase(async () => {
        const limit = pageLimit(filter.limit);
        let query = db.selectFrom('rulesets').selectAll();
        if (filter.cursor !== undefined) query = query.where('id', '>', Math.min(decodeCursor('rulesets', filter.cursor), MAX_ROW_ID));
        const rows = await query
          .orderBy('id', 'asc')
          .limit(limit + 1)
          .execute();
        return toPage('rulesets', rows.map(toRuleset), limit, (ruleset) => ruleset.id);
      }),
  };
}

function toRuleset(row: Selectable<RulesetsTable>): Ruleset {
  return {
    id: row.id,
    name: row.name,
    domain: row.domain,
    description: row.description,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}
