// Fresh databases for tests: an in-memory PGlite store, or a throwaway database on the real PostgreSQL server.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { type OpenStoreOptions, openStore, type SqlStore } from '../../src/store/open-store.ts';

/** The server tests create their databases on: DATABASE_URL when set, else the local PostgreSQL. */
export const ADMIN_DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface TestDatabase {
  url: string;
  name: string;
  /** Drops the database, closing any connection still open to it. */
  drop(): Promise<void>;
}

/** CREATE DATABASE rules_test_<random> on the admin server; call drop() in afterAll. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `rules_test_${randomUUID().replaceAll('-', '')}`;
  await withAdmin(async (client) => {
    await client.query(`create database ${name}`);
  });
  const url = new URL(ADMIN_DATABASE_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: () =>
      withAdmin(async (client) => {
        await client.query(`drop database if exists ${name} with (force)`);
      }),
  };
}

export type StoreKind = 'pglite' | 'postgres';

export interface TestStore {
  store: SqlStore;
  /** Closes the store and drops its database; safe to call twice. */
  cleanup(): Promise<void>;
}

/** A migrated store on a fresh in-memory PGlite or a fresh PostgreSQL database. Open one per test file. */
export async function openTestStore(kind: StoreKind, options: Partial<OpenStoreOptions> = {}): Promise<TestStore> {
  if (kind === 'pglite') {
    const store = await openStore({ ...options, dataDir: 'memory://' });
    return { store, cleanup: () => store.close() };
  }
  const database = await createTestDatabase();
  try {
    const store = await openStore({ ...options, databaseUrl: database.url, dataDir: '' });
    return {
      store,
      async cleanup() {
        try {
          await store.close();
        } finally {
          await database.drop();
        }
      },
    };
  } catch (error) {
    await database.drop();
    throw error;
  }
}

/** A fresh temporary directory for a persisted PGlite, removed by remove(). */
export async function createTempDataDir(): Promise<{ path: string; remove(): Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), 'rules-pglite-'));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

async function withAdmin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN_DATABASE_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}
