// The store contract on real PostgreSQL, in a database created for this file and dropped after it.

import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { type AddressInfo, createServer } from 'node:net';
import { Kysely, PostgresDialect, sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { newExecutionId } from '../../../src/evaluation/execution-id.ts';
import { migrations } from '../../../src/store/migrations/index.ts';
import { openPool, openStore } from '../../../src/store/open-store.ts';
import { createTestDatabase, openTestStore } from '../../helpers/databases.ts';
import { startTcpProxy } from '../../helpers/tcp-proxy.ts';
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
        const applied = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(second.db);
        expect(applied.rows.map((row) => row.name)).toEqual(Object.keys(migrations));
      } finally {
        await second.close();
      }
      expect(await second.ping()).toBe(false);
    } finally {
      await database.drop();
    }
  });

  it('reports a database emptied under it as not ready, and its calls as UNAVAILABLE rather than internal errors', async () => {
    const database = await createTestDatabase();
    try {
      const store = await openStore({ databaseUrl: database.url, dataDir: '' });
      try {
        await store.rules.create({ name: 'gone', condition_dsl: { type: 'exists', field: 'a' }, action: 'x' }, 'a');
        expect(await store.ping()).toBe(true);
        await sql`drop schema public cascade`.execute(store.db);
        await sql`create schema public`.execute(store.db);
        expect(await store.ping()).toBe(false);
        await expect(store.rules.list({ limit: 10 })).rejects.toMatchObject({ code: 'UNAVAILABLE' });
      } finally {
        await store.close();
      }
    } finally {
      await database.drop();
    }
  });

  it('moves the executions of a database made before batches into batches, readable as before', async () => {
    const database = await createTestDatabase();
    try {
      const old = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: database.url, max: 1 }) }) });
      const rows = Array.from({ length: 1_234 }, (_, i) => ({
        execution_id: i === 0 ? randomUUID() : newExecutionId(Date.UTC(2026, 0, 1) + i * 1_000),
        source: i % 2 === 0 ? 'kafka' : 'http',
        domain: i % 3 === 0 ? null : 'payments',
        facts: { i, note: `fact ${i}` },
        fired_rules: [i],
        actions: ['review'],
        latency_ms: i / 8,
        revision: i,
        created_at: new Date(Date.UTC(2026, 0, 1) + i * 1_000).toISOString(),
      }));
      try {
        const migrator = new Migrator({
          db: old,
          provider: { getMigrations: async () => ({ '001-initial': migrations['001-initial']! }) },
        });
        expect((await migrator.migrateToLatest()).error).toBeUndefined();
        await sql`
          insert into executions select * from jsonb_populate_recordset(null::executions, ${JSON.stringify(rows)}::jsonb)
        `.execute(old);
      } finally {
        await old.destroy();
      }
      const store = await openStore({ databaseUrl: database.url, dataDir: '' });
      try {
        for (const row of [rows[0]!, rows[1]!, rows[617]!, rows[1_233]!]) expect(await store.executions.get(row.execution_id)).toEqual(row);
        const tables = await sql<{ name: string }>`select tablename as name from pg_tables where tablename like 'execution%'`.execute(
          store.db,
        );
        expect(tables.rows.map((table) => table.name)).toEqual(['execution_batches']);
        const { rows: counts } = await sql<{ n: string }>`select sum(record_count) as n from execution_batches`.execute(store.db);
        expect(Number(counts[0]?.n)).toBe(1_234);
      } finally {
        await store.close();
      }
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

  it('fails with UNAVAILABLE, not hanging, when the server accepts connections but never answers', { timeout: 30_000 }, async () => {
    const silent = createServer(() => undefined);
    silent.listen(0, '127.0.0.1');
    await once(silent, 'listening');
    const { port } = silent.address() as AddressInfo;
    const started = Date.now();
    try {
      await expect(openStore({ databaseUrl: `postgres://postgres@127.0.0.1:${port}/test`, dataDir: '' })).rejects.toMatchObject({
        code: 'UNAVAILABLE',
      });
      expect(Date.now() - started).toBeLessThan(20_000);
    } finally {
      silent.close();
    }
  });

  it('fails a query with UNAVAILABLE, not hanging, when the server stops answering on an open connection, then drops that connection', {
    timeout: 30_000,
  }, async () => {
    const database = await createTestDatabase();
    const proxy = await startTcpProxy(database.url);
    const store = await openStore({ databaseUrl: proxy.url, dataDir: '', queryTimeoutMs: 1_000 });
    try {
      const { value: rule } = await store.rules.create({ name: 'kept', condition_dsl: { type: 'exists', field: 'a' }, action: 'x' }, 'a');
      // The pool now holds an open connection; the server goes silent on it.
      proxy.delayReplies(60_000);
      const started = Date.now();
      await expect(store.rules.get(rule.id)).rejects.toMatchObject({ code: 'UNAVAILABLE' });
      expect(Date.now() - started).toBeLessThan(10_000);
      // The server answers again; the stuck connection (still owed its 60 s-late reply) is not reused.
      proxy.delayReplies(0);
      expect(await store.rules.get(rule.id)).toEqual(rule);
    } finally {
      proxy.close();
      await store.close().catch(() => undefined);
      await database.drop();
    }
  });

  it('gives up on a lock another instance holds, on the server too: nothing is left queued behind it', { timeout: 30_000 }, async () => {
    const database = await createTestDatabase();
    const store = await openStore({ databaseUrl: database.url, dataDir: '', queryTimeoutMs: 2_000 });
    // Another instance, stalled in the middle of a rule change: it holds the revision row every change locks.
    const stalled = new pg.Client({ connectionString: database.url });
    await stalled.connect();
    const waiting = new pg.Client({ connectionString: database.url });
    await waiting.connect();
    try {
      await stalled.query('begin');
      await stalled.query('update store_revision set revision = revision where id = 1');
      const started = Date.now();
      await expect(
        store.rules.create({ name: 'blocked', condition_dsl: { type: 'exists', field: 'a' }, action: 'x' }, 'a'),
      ).rejects.toMatchObject({ code: 'UNAVAILABLE' });
      // One wait, not a second one for the ROLLBACK on the same connection.
      expect(Date.now() - started).toBeLessThan(4_000);
      await new Promise((resolve) => setTimeout(resolve, 500));
      const queued = await waiting.query(
        "select count(*)::int as n from pg_stat_activity where datname = $1 and wait_event_type = 'Lock'",
        [database.name],
      );
      expect(queued.rows[0].n).toBe(0);
      await stalled.query('rollback');
      const { value } = await store.rules.create({ name: 'after', condition_dsl: { type: 'exists', field: 'a' }, action: 'x' }, 'a');
      expect(value.name).toBe('after');
    } finally {
      await stalled.end().catch(() => undefined);
      await waiting.end().catch(() => undefined);
      await store.close().catch(() => undefined);
      await database.drop();
    }
  });

  it('reports, and never throws, the error of a checked-out connection the server ends (idle in a transaction too long)', async () => {
    const database = await createTestDatabase();
    const errors: unknown[] = [];
    const store = await openStore({ databaseUrl: database.url, dataDir: '', onError: (error) => errors.push(error) });
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    try {
      const failed = await store.db
        .transaction()
        .execute(async (trx) => {
          const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
          // What the server does to a session idle in a transaction past idle_in_transaction_session_timeout.
          await admin.query('select pg_terminate_backend($1)', [rows[0]!.pid]);
          await new Promise((resolve) => setTimeout(resolve, 300));
          await sql`select 1`.execute(trx);
        })
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      expect(failed).toBeInstanceOf(Error);
      expect(errors.length).toBeGreaterThan(0);
      // The pool gave up that connection: the next query gets a fresh one.
      expect(await store.rules.revision()).toBe(0);
    } finally {
      await admin.end();
      await store.close().catch(() => undefined);
      await database.drop();
    }
  });

  it('hands out connections that always have an error listener, so an error arriving as one opens cannot end the process', async () => {
    const database = await createTestDatabase();
    const pool = openPool(database.url, 2, () => undefined, 1_000);
    try {
      // pg-pool removes its own listener before handing a client over: without one of ours, this emit would throw.
      const client = await pool.connect();
      try {
        expect(client.listenerCount('error')).toBeGreaterThan(0);
        expect(() => client.emit('error', new Error('terminating connection due to administrator command'))).not.toThrow();
      } finally {
        client.release(true);
      }
    } finally {
      await pool.end();
      await database.drop();
    }
  });

  it('dates a change waiting on the revision lock no earlier than the entry its holder committed', { timeout: 30_000 }, async () => {
    const database = await createTestDatabase();
    const store = await openStore({ databaseUrl: database.url, dataDir: '' });
    const holder = new pg.Client({ connectionString: database.url });
    await holder.connect();
    try {
      await holder.query('begin');
      await holder.query('update store_revision set revision = revision + 1 where id = 1');
      // The holder's entry is dated an hour ahead, as a database clock stepped back afterwards would leave it.
      const ahead = new Date(Date.now() + 3_600_000);
      await holder.query(
        "insert into audit_log (at, actor, action, entity_type, entity_id, prev_hash, hash) values ($1, 'x', 'create', 'rule', 1, 'p', 'h')",
        [ahead],
      );
      const waiting = store.rules.create({ name: 'late', condition_dsl: { type: 'exists', field: 'a' }, action: 'x' }, 'a');
      await new Promise((resolve) => setTimeout(resolve, 300));
      await holder.query('commit');
      const { value } = await waiting;
      expect(Date.parse(value.created_at)).toBeGreaterThanOrEqual(ahead.getTime());
    } finally {
      await holder.end();
      await store.close().catch(() => undefined);
      await database.drop();
    }
  });

  it('fails with UNAVAILABLE while the database refuses new connections, and serves again once it accepts them', async () => {
    const database = await createTestDatabase();
    const store = await openStore({ databaseUrl: database.url, dataDir: '' });
    const admin = new pg.Client({ connectionString: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test' });
    await admin.connect();
    try {
      await admin.query(`alter database ${database.name} with allow_connections false`);
      await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [
        database.name,
      ]);
      await expect(store.rules.all()).rejects.toMatchObject({ code: 'UNAVAILABLE', message: 'the database is unavailable' });
      await admin.query(`alter database ${database.name} with allow_connections true`);
      expect(await store.rules.all()).toEqual([]);
    } finally {
      await admin.end();
      await store.close().catch(() => undefined);
      await database.drop();
    }
  });

  it('names the cause when the database itself is missing', async () => {
    const url = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test');
    url.pathname = `/missing_${randomUUID().replaceAll('-', '')}`;
    await expect(openStore({ databaseUrl: url.toString(), dataDir: '' })).rejects.toThrow(
      /the database migrations could not run: database "missing_[0-9a-f]+" does not exist/,
    );
  });
});
