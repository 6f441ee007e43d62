// The initial schema: rules with their versions, rulesets, executions, the hash-chained audit log and the revision counter.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('rules')
    .addColumn('id', 'integer', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('domain', 'text', (c) => c.notNull())
    .addColumn('condition_dsl', 'jsonb', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('priority', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('enabled', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('description', 'text')
    .addColumn('tags', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    // The unique-violation on this constraint is what turns a duplicate name into CONFLICT, race-free.
    .addUniqueConstraint('rules_domain_name_key', ['domain', 'name'])
    .execute();
  await db.schema.createIndex('rules_domain_id_idx').on('rules').columns(['domain', 'id']).execute();
  await db.schema.createIndex('rules_tags_idx').on('rules').using('gin').column('tags').execute();

  // No foreign key to rules: a deleted rule's history outlives its row.
  await db.schema
    .createTable('rule_versions')
    .addColumn('rule_id', 'integer', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('change', 'text', (c) => c.notNull().check(sql`change in ('create', 'update', 'delete')`))
    .addColumn('snapshot', 'jsonb', (c) => c.notNull())
    .addColumn('changed_at', 'timestamptz', (c) => c.notNull())
    .addColumn('actor', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('rule_versions_pkey', ['rule_id', 'version'])
    .execute();

  await db.schema
    .createTable('rulesets')
    .addColumn('id', 'integer', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('domain', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .addUniqueConstraint('rulesets_name_key', ['name'])
    .execute();

  await db.schema
    .createTable('executions')
    .addColumn('execution_id', 'text', (c) => c.primaryKey())
    .addColumn('source', 'text', (c) => c.notNull().check(sql`source in ('http', 'bulk', 'kafka', 'session')`))
    .addColumn('domain', 'text')
    .addColumn('facts', 'jsonb', (c) => c.notNull())
    .addColumn('fired_rules', 'jsonb', (c) => c.notNull())
    .addColumn('actions', 'jsonb', (c) => c.notNull())
    .addColumn('latency_ms', 'double precision', (c) => c.notNull())
    .addColumn('revision', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .execute();
  // Retention deletes by age.
  await db.schema.createIndex('executions_created_at_idx').on('executions').column('created_at').execute();

  await db.schema
    .createTable('audit_log')
    .addColumn('id', 'bigint', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('at', 'timestamptz', (c) => c.notNull())
    .addColumn('actor', 'text', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull().check(sql`action in ('create', 'update', 'delete')`))
    .addColumn('entity_type', 'text', (c) => c.notNull().check(sql`entity_type in ('rule', 'ruleset')`))
    .addColumn('entity_id', 'integer', (c) => c.notNull())
    .addColumn('before', 'jsonb')
    .addColumn('after', 'jsonb')
    .addColumn('prev_hash', 'text', (c) => c.notNull())
    .addColumn('hash', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('audit_log_entity_idx').on('audit_log').columns(['entity_type', 'entity_id', 'id']).execute();
  await db.schema.createIndex('audit_log_at_idx').on('audit_log').column('at').execute();

  // One row; every change to rules or rulesets bumps it, and its row lock serializes audit appends.
  await db.schema
    .createTable('store_revision')
    .addColumn('id', 'integer', (c) => c.primaryKey().check(sql`id = 1`))
    .addColumn('revision', 'bigint', (c) => c.notNull())
    .execute();
  await sql`insert into store_revision (id, revision) values (1, 0)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['store_revision', 'audit_log', 'executions', 'rulesets', 'rule_versions', 'rules']) {
    await db.schema.dropTable(table).ifExists().execute();
  }
}
