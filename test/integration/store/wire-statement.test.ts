// One statement as one extended-protocol exchange against PGlite: bytes kept as they are, text and NULL parameters, and
// an error that keeps its SQLSTATE and leaves the connection answering.
import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statementMessage } from '../../../src/store/wire-statement.ts';

describe('a statement sent as one exchange', () => {
  let db: PGlite;

  beforeAll(async () => {
    db = await PGlite.create('memory://');
    await db.exec('create table blobs (id int primary key, name text, body bytea)');
  });

  afterAll(async () => {
    await db.close();
  });

  it('stores bytes in binary format exactly, beside text, number and NULL parameters', async () => {
    const everyByte = Uint8Array.from({ length: 512 }, (_, i) => i % 256);
    await db.execProtocol(statementMessage('insert into blobs values ($1, $2, $3)', [1, 'grüße, 🙂', everyByte]));
    await db.execProtocol(statementMessage('insert into blobs values ($1, $2, $3)', [2, null, new Uint8Array(0)]));
    const { rows } = await db.query<{ id: number; name: string | null; hex: string }>(
      `select id, name, encode(body, 'hex') as hex from blobs order by id`,
    );
    expect(rows).toEqual([
      { id: 1, name: 'grüße, 🙂', hex: Buffer.from(everyByte).toString('hex') },
      { id: 2, name: null, hex: '' },
    ]);
  });

  it('fails with the database error and its SQLSTATE, and the next statement runs', async () => {
    const error = await db
      .execProtocol(statementMessage('insert into blobs values ($1, $2, $3)', [1, 'again', new Uint8Array([1])]))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: '23505', constraint: 'blobs_pkey' });
    const missing = await db.execProtocol(statementMessage('insert into nowhere values ($1)', [1])).catch((e: unknown) => e);
    expect(missing).toMatchObject({ code: '42P01' });
    const { messages } = await db.execProtocol(statementMessage('select count(*) from blobs where id > $1', [0]));
    // No Describe is sent, so rows come without a description, in text format.
    expect(messages.map((message) => message.name)).toEqual([
      'parseComplete',
      'bindComplete',
      'dataRow',
      'commandComplete',
      'readyForQuery',
    ]);
    expect(messages[2]).toMatchObject({ fields: ['2'] });
  });

  it('frames as many parameters as the protocol counts, 65,535', async () => {
    const count = 40_000;
    const rows = Array.from({ length: count }, (_, i) => `($${i + 1}::int)`).join(', ');
    const sql = `select sum(v)::int from (values ${rows}) as t (v)`;
    const { messages } = await db.execProtocol(
      statementMessage(
        sql,
        Array.from({ length: count }, () => 1),
      ),
    );
    expect(messages.find((message) => message.name === 'dataRow')).toMatchObject({ fields: [String(count)] });
  });

  it('refuses a statement it cannot frame', () => {
    expect(() => statementMessage('select 1\0', [])).toThrow(/NUL/);
    expect(() =>
      statementMessage(
        'select 1',
        Array.from({ length: 65_536 }, () => 1),
      ),
    ).toThrow(/65,535/);
  });
});
