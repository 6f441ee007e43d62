// Brings the schema to the latest migration; run by openStore before anything else touches the database.
import type { Kysely } from 'kysely';
import { Migrator } from 'kysely/migration';
import { describeError } from '../errors.ts';
import { migrations } from './migrations/index.ts';

export async function migrateToLatest(db: Kysely<unknown>): Promise<string[]> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
  const { error, results } = await migrator.migrateToLatest();
  if (error !== undefined) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName;
    // No failed migration named: the database could not be reached or read before any ran (e.g. no such database or user).
    const what = failed === undefined ? 'the database migrations could not run' : `database migration "${failed}" failed`;
    throw new Error(`${what}: ${error instanceof Error ? describeError(error) : String(error)}`, { cause: error });
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
