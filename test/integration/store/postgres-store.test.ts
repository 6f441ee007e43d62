// The store contract on real PostgreSQL, in a database created for this file and dropped after it.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { openStore } from '../../../src/store/open-store.ts';
import { createTestDatabase, openTestStore } from '../../helpers/databases.ts';
import { describeStoreContract } from './store-contract.ts';

describeStoreContract('PostgreSQL', () => openTestStore('postgres'));

describe('opening the store on PostgreSQL', () => {
  it('migrates once: a second open of the same database finds the schema in place', async () => {
    const database = await createTestDatabase();
    try {
      const first = await openStore({ databaseUrl: database.url, dataDir: '' });
      const { value: rule } = await first.rules.create({ name: 'kept', condition_dsl: { type: 'exists', field: 'a' }, action: 'x' }, 'a');
      await first.close();
      const second = await openStore({ databaseUrl: database.url, dataDir: '' });
      try {
        expect(await second.rules.get(rule.id)).toEqual(rule);
        expect(await second.rules.revision()).toBe(1);
        const migrations = await sql<{ name: string }>`select name from kysely_migration`.execute(second.db);
        expect(migrations.rows.map((row) => row.name)).toEqual(['001-initial']);
      } finally {
        await second.close();
      }
      expect(await second.ping()).toBe(false);
    } finally {
      await database.drop();
    }
  });

  it('fails with UNAVAILABLE when the server cannot be reached', async () => {
    await expect(openStore({ databaseUrl: 'postgres://postgres@127.0.0.1:1/none', dataDir: '' })).rejects.toMatchObject({
      code: 'UNAVAILABLE',
      message: 'the database is unavailable',
    });
  });
});
