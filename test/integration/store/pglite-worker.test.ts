// PGlite on its worker thread: queries, transactions, errors that keep their SQLSTATE, and a thread that dies.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isUniqueViolation, withDatabase } from '../../../src/store/database-errors.ts';
import { BatchBuffer } from '../../../src/store/execution-batches.ts';
import { PgliteWorker } from '../../../src/store/pglite-worker.ts';
import { createTempDataDir } from '../../helpers/databases.ts';

describe('PGlite on a worker thread', () => {
  let db: PgliteWorker;

  beforeAll(async () => {
    db = await PgliteWorker.open('memory://');
    await db.query('create table items (id int primary key, name text not null, tags jsonb, at timestamptz)');
  });

  afterAll(async () => {
    await db.close();
  });

  it('runs parameterized queries and returns rows with their types', async () => {
    const at = new Date('2026-03-02T08:00:00.123Z');
    const inserted = await db.query('insert into items values ($1, $2, $3, $4)', [1, 'first', JSON.stringify({ a: [1, 2] }), at]);
    expect(inserted.affectedRows).toBe(1);
    const read = await db.query<{ id: number; name: string; tags: unknown; at: Date }>('select * from items where id = $1', [1], {
      rowMode: 'object',
    });
    expect(read.rows).toEqual([{ id: 1, name: 'first', tags: { a: [1, 2] }, at }]);
    expect(read.fields.map((f) => f.name)).toEqual(['id', 'name', 'tags', 'at']);
  });

  it('rejects with the database error, its SQLSTATE and constraint kept', async () => {
    await db.query('insert into items (id, name) values (2, $1)', ['second']);
    const error = await db.query('insert into items (id, name) values (2, $1)', ['again']).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({ code: '23505', constraint: 'items_pkey' });
    expect(isUniqueViolation(error, 'items_pkey')).toBe(true);
    const syntax = await db.query('selec 1').catch((e: unknown) => e);
    expect(syntax).toMatchObject({ code: '42601', message: expect.stringContaining('syntax error') });
  });

  it('commits a transaction whose callback succeeds and rolls back one that throws', async () => {
    const value = await db.transaction(async (tx) => {
      await tx.query('insert into items (id, name) values (10, $1)', ['kept']);
      return (await tx.query<{ n: number }>('select count(*)::int as n from items where id = 10')).rows[0]?.n;
    });
    expect(value).toBe(1);
    const failure = new Error('changed my mind');
    await expect(
      db.transaction(async (tx) => {
        await tx.query('insert into items (id, name) values (11, $1)', ['dropped']);
        throw failure;
      }),
    ).rejects.toBe(failure);
    const ids = await db.query<{ id: number }>('select id from items where id in (10, 11) order by id');
    expect(ids.rows).toEqual([{ id: 10 }]);
  });

  it('rolls back on an explicit rollback and runs other queries only after the transaction ends', async () => {
    const order: string[] = [];
    const inside = db.transaction(async (tx) => {
      await tx.query('insert into items (id, name) values (20, $1)', ['rolled back']);
      order.push('inside');
      await new Promise((resolve) => setTimeout(resolve, 50));
      await tx.rollback();
    });
    // Issued while the transaction is open: PGlite queues it behind the transaction.
    const outside = db.query<{ n: number }>('select count(*)::int as n from items where id = 20').then((result) => {
      order.push('outside');
      return result.rows[0]?.n;
    });
    await inside;
    expect(await outside).toBe(0);
    expect(order).toEqual(['inside', 'outside']);
  });

  it('serves concurrent callers, each answer to its own query', async () => {
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) => db.query<{ v: number }>('select $1::int * 2 as v', [i]).then((r) => r.rows[0]?.v)),
    );
    expect(answers).toEqual(Array.from({ length: 200 }, (_, i) => i * 2));
  });

  it('inserts an execution batch outside a transaction another caller holds open, and only once', async () => {
    await db.query(`create table execution_batches (batch_id int generated always as identity, id_keys int8range not null,
      newest_at timestamptz not null, record_count int not null, records bytea not null, batch_key uuid unique, record_ends bytea)`);
    const batch = new BatchBuffer();
    const at = Date.parse('2026-03-02T08:00:00Z');
    batch.add({
      execution_id: '019ca8b2-0a00-7000-8000-000000000001',
      source: 'http',
      domain: null,
      createdMs: at,
      requestJson: '{"facts":{"a":1}}',
      outcomeJson: '{}',
    });
    const contents = batch.contents();
    let inserted: Promise<void> | undefined;
    await db.transaction(async (tx) => {
      await tx.query('insert into items (id, name) values (30, $1)', ['rolled back']);
      inserted = db.insertExecutionBatch(contents);
      await new Promise((resolve) => setTimeout(resolve, 50));
      await tx.rollback();
    });
    await inserted;
    const stored = async (): Promise<unknown[]> => (await db.query('select record_count, newest_at from execution_batches')).rows;
    expect(await stored()).toEqual([{ record_count: 1, newest_at: new Date(at) }]);
    // Inserted again, as after a lost answer: the batch key keeps it one row.
    await db.insertExecutionBatch(contents);
    expect(await stored()).toEqual([{ record_count: 1, newest_at: new Date(at) }]);
    expect((await db.query('select 1 from items where id = 30')).rows).toEqual([]);
  });

  it('fails every pending and later call once the thread is gone, and close still resolves', async () => {
    // A thread that opens, then dies on its first request, as on a crash inside the database.
    const doomed = await PgliteWorker.open('memory://', new URL('../../fixtures/dying-database-thread.ts', import.meta.url));
    await expect(doomed.query('select 1')).rejects.toThrow(/embedded database thread stopped \(exit code 3\)/);
    expect(doomed.closed).toBe(true);
    await expect(doomed.query('select 1')).rejects.toThrow(/exit code 3/);
    // The service answers it as 503 UNAVAILABLE (its readiness shows the database down), not as a 500.
    const later = await withDatabase(() => doomed.query('select 1')).catch((error: unknown) => error);
    expect(later).toMatchObject({ code: 'UNAVAILABLE' });
    await expect(doomed.close()).resolves.toBeUndefined();
  });

  it('reports why a data directory cannot be opened', async () => {
    const dir = await createTempDataDir();
    try {
      const file = join(dir.path, 'not-a-directory');
      await writeFile(file, 'x');
      await expect(PgliteWorker.open(join(file, 'data'))).rejects.toThrow(/ENOTDIR|not a directory|no such file/i);
    } finally {
      await dir.remove();
    }
  });
});
