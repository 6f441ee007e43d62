import { once } from 'node:events';
import { createServer as createHttpServer } from 'node:http';
import { type AddressInfo, createServer } from 'node:net';
import protobuf from 'protobufjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError, isRetryable } from '../../../src/errors.ts';
import { decodeFactValue } from '../../../src/kafka/fact-codec.ts';
import { decideFailure } from '../../../src/kafka/failure-policy.ts';
import { avroToJson } from '../../../src/kafka/registry-avro.ts';
import { classifyRegistryError, connectSchemaRegistry, createRegistryDecoder } from '../../../src/kafka/schema-registry-decoder.ts';
import { avroLong } from '../../helpers/avro-bytes.ts';

const httpError = (status: number, message: string) => Object.assign(new Error(message), { status });

describe('classifyRegistryError', () => {
  it("treats a 404 carrying the registry's own 'schema not found' code as an input that can never be decoded", () => {
    const error = classifyRegistryError(42, httpError(404, 'Schema not found'), { errorCode: 40403 }) as AppError;
    expect(error.code).toBe('VALIDATION_ERROR');
    expect(error.message).toBe('schema id 42 is not in the schema registry');
    expect(isRetryable(error)).toBe(false);
  });

  it('treats a 404 without that code (a proxy, a wrong base URL) as the registry being unavailable, naming the variable', () => {
    for (const code of [undefined, 404]) {
      const error = classifyRegistryError(
        42,
        httpError(404, 'RESTEASY003210: Could not find resource'),
        code === undefined ? {} : { errorCode: code },
      ) as AppError;
      expect(error.code).toBe('UNAVAILABLE');
      expect(error.message).toContain('check SCHEMA_REGISTRY_URL');
      expect(isRetryable(error)).toBe(true);
    }
  });

  it('treats a registry never reached, which the client reports as status 400, as unavailable, naming why, not the 400', async () => {
    // A port just freed: nothing listens there (fetch refuses port 1 itself, before any connection).
    const closed = createServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const { port } = closed.address() as AddressInfo;
    closed.close();
    const refused = await createRegistryDecoder(connectSchemaRegistry(`http://127.0.0.1:${port}`, 500))
      .decode(Buffer.from([0, 0, 0, 0, 7, 2]))
      .then(
        () => undefined,
        (e: unknown) => e as AppError,
      );
    expect(refused?.code).toBe('UNAVAILABLE');
    expect(refused?.message).toBe('schema registry could not be reached for schema id 7 (ECONNREFUSED)');
    expect(isRetryable(refused)).toBe(true);
    const timedOut = classifyRegistryError(7, httpError(400, 'Error, status 400: Timeout (300ms)'), { unreachable: 'Timeout (300ms)' });
    expect(timedOut.message).toBe('schema registry could not be reached for schema id 7 (Timeout (300ms))');
  });

  it('treats other HTTP failures as unavailable, naming only the status', () => {
    for (const status of [400, 401, 500, 503]) {
      const error = classifyRegistryError(7, httpError(status, 'Error, status 502: <html>upstream 10.0.3.17:8080</html>')) as AppError;
      expect(error.code).toBe('UNAVAILABLE');
      expect(error.message).toBe(`schema registry could not be read for schema id 7 (status ${status})`);
      expect(isRetryable(error)).toBe(true);
    }
  });

  it('leaves a schema the client cannot use uncoded: retried a few times, then dead-lettered as INTERNAL_ERROR', () => {
    const error = classifyRegistryError(3, new Error('Unsupported schema type'));
    expect(error).not.toBeInstanceOf(AppError);
    expect(error.message).toBe('schema id 3 cannot be used to decode: Unsupported schema type');
    expect(decideFailure(error, 1, 3).kind).toBe('retry');
    expect(decideFailure(error, 3, 3)).toEqual({
      kind: 'dead-letter',
      code: 'INTERNAL_ERROR',
      detail: 'evaluation failed 3 times: schema id 3 cannot be used to decode: Unsupported schema type',
    });
  });
});

describe('connectSchemaRegistry', () => {
  it('gives up on a registry that accepts connections but never answers, as unavailable (retried), not hanging', async () => {
    const silent = createServer(() => undefined);
    silent.listen(0, '127.0.0.1');
    await once(silent, 'listening');
    const { port } = silent.address() as AddressInfo;
    try {
      const decoder = createRegistryDecoder(connectSchemaRegistry(`http://127.0.0.1:${port}`, 200));
      const started = Date.now();
      const error = await decoder.decode(Buffer.from([0, 0, 0, 0, 7, 2, 4])).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'UNAVAILABLE' });
      expect(isRetryable(error)).toBe(true);
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      silent.close();
    }
  });
});

/** A registry answering GET /schemas/ids/{id} from a table, as a real one, a proxy in front of one, or a wrong URL would. */
describe('decoding through a registry', () => {
  const answers = new Map<number, { status: number; type: string; body: string }>();
  const onceAnswers = new Map<number, { status: number; type: string; body: string }[]>();
  const requests = new Map<number, number>();
  /** Subject versions by path (`/subjects/s/versions/1`), for schemas that reference others. */
  const versions = new Map<string, string>();
  const server = createHttpServer((request, response) => {
    const version = versions.get((request.url ?? '').split('?')[0] ?? '');
    if (version !== undefined) {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(version);
      return;
    }
    const id = Number(/\/schemas\/ids\/(\d+)/.exec(request.url ?? '')?.[1]);
    requests.set(id, (requests.get(id) ?? 0) + 1);
    // A one-off answer (a proxy's page once) goes before the standing one.
    const answer = onceAnswers.get(id)?.shift() ??
      answers.get(id) ?? { status: 404, type: 'application/json', body: '{"error_code":40403,"message":"Schema not found"}' };
    response.writeHead(answer.status, { 'content-type': answer.type });
    response.end(answer.body);
  });
  let decoder: ReturnType<typeof createRegistryDecoder>;
  let registry: ReturnType<typeof connectSchemaRegistry>['registry'];
  const schemaAnswer = (schema: object | string, schemaType?: string) => ({
    status: 200,
    type: 'application/vnd.schemaregistry.v1+json',
    body: JSON.stringify({ schema: typeof schema === 'string' ? schema : JSON.stringify(schema), ...(schemaType ? { schemaType } : {}) }),
  });
  const jsonAnswer = (body: object) => ({ status: 200, type: 'application/vnd.schemaregistry.v1+json', body: JSON.stringify(body) });
  const framed = (id: number, payload: Buffer, indexes: number[] = []) => {
    const header = Buffer.alloc(5);
    header.writeInt32BE(id, 1);
    return Buffer.concat([header, Buffer.from(indexes), payload]);
  };
  const failureOf = (value: Buffer) =>
    decoder.decode(value).then(
      () => undefined,
      (error: unknown) => error as Error,
    );

  beforeAll(async () => {
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const connected = connectSchemaRegistry(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, 2_000);
    registry = connected.registry;
    decoder = createRegistryDecoder(connected);
  });
  afterAll(() => {
    server.close();
  });

  it("dead-letters only the registry's 'schema not found'; a proxy's 404, an error page or a login page are retried", async () => {
    answers.set(11, { status: 404, type: 'text/html', body: '<html><h1>404 Not Found</h1>nginx, upstream registry-internal:8080</html>' });
    answers.set(12, {
      status: 404,
      type: 'application/json',
      body: '{"error_code":404,"message":"RESTEASY003210: Could not find resource"}',
    });
    answers.set(13, { status: 502, type: 'text/html', body: '<html>502 Bad Gateway: upstream 10.0.3.17:8080 (internal-lb-7)</html>' });
    answers.set(14, { status: 200, type: 'text/html', body: '<!doctype html><title>Sign in</title>' });
    expect(await failureOf(framed(10, Buffer.from([2])))).toMatchObject({
      code: 'VALIDATION_ERROR',
      message: 'schema id 10 is not in the schema registry',
    });
    for (const id of [11, 12, 13, 14]) {
      const error = await failureOf(framed(id, Buffer.from([2])));
      expect(error, `schema id ${id}`).toMatchObject({ code: 'UNAVAILABLE' });
      expect(error?.message, `schema id ${id}`).not.toMatch(/internal|10\.0\.3\.17|html/i);
    }
  });

  it("names the status of a registry's own 400, whatever its message says, and why a TLS connection to it failed", async () => {
    answers.set(15, { status: 400, type: 'application/json', body: '{"error_code":400,"message":"upstream said: read ECONNRESET"}' });
    expect(await failureOf(framed(15, Buffer.from([2])))).toMatchObject({
      code: 'UNAVAILABLE',
      message: 'schema registry could not be read for schema id 15 (status 400)',
    });
    // https:// to a server speaking plain HTTP: no answer was ever read.
    const tls = createRegistryDecoder(connectSchemaRegistry(`https://127.0.0.1:${(server.address() as AddressInfo).port}`, 2_000));
    const failed = await tls.decode(framed(15, Buffer.from([2]))).then(
      () => undefined,
      (error: unknown) => error as AppError,
    );
    expect(failed?.code).toBe('UNAVAILABLE');
    expect(failed?.message).toMatch(/^schema registry could not be reached for schema id 15 \([A-Z0-9_]+\)$/);
  });

  it('decodes Avro unions, records, bytes and fixed to the JSON twin of the fact', async () => {
    answers.set(
      20,
      schemaAnswer({
        type: 'record',
        name: 'FactMessage',
        namespace: 'x',
        fields: [
          {
            name: 'facts',
            type: { type: 'map', values: ['null', 'boolean', 'long', 'string', { type: 'array', items: 'long' }] },
          },
          // Two number branches: read as the one written (double).
          { name: 'score', type: ['null', 'int', 'double'], default: null },
          { name: 'domain', type: ['null', 'string'], default: null },
          {
            name: 'meta',
            type: [
              'null',
              {
                type: 'record',
                name: 'Card',
                fields: [{ name: 'tier', type: { type: 'enum', name: 'Tier', symbols: ['basic', 'gold'] } }],
              },
              {
                type: 'record',
                name: 'Blob',
                fields: [
                  { name: 'raw', type: 'bytes' },
                  { name: 'tag', type: { type: 'fixed', name: 'Tag', size: 2 } },
                ],
              },
            ],
            default: null,
          },
        ],
      }),
    );
    // This client reads every union wrapped, so it writes them so too (the bytes are the same as any producer's).
    const value = await registry.encode(20, {
      facts: { amount: { long: 7200 }, country: { string: 'US' }, vip: { boolean: true }, none: null, ids: { array: [1, 2] } },
      score: { double: 2.5 },
      domain: { string: 'payments' },
      meta: { 'x.Blob': { raw: Buffer.from('ok'), tag: Buffer.from('ab') } },
    });
    expect(await decoder.decode(value)).toEqual({
      facts: { amount: 7200, country: 'US', vip: true, none: null, ids: [1, 2] },
      score: 2.5,
      domain: 'payments',
      meta: { raw: 'ok', tag: 'ab' },
    });
    const card = await registry.encode(20, { facts: {}, score: null, domain: null, meta: { 'x.Card': { tier: 'gold' } } });
    expect(await decoder.decode(card)).toEqual({ facts: {}, score: null, domain: null, meta: { tier: 'gold' } });
  });

  it('reads longs past 2^53 and decimals as the numbers their JSON twin holds, and keeps a map key `__proto__` to refuse it', async () => {
    answers.set(
      21,
      schemaAnswer({
        type: 'record',
        name: 'Wide',
        namespace: 'x',
        fields: [
          { name: 'id', type: 'long' },
          { name: 'at', type: { type: 'long', logicalType: 'timestamp-nanos' } },
          { name: 'price', type: { type: 'bytes', logicalType: 'decimal', precision: 10, scale: 2 } },
          { name: 'delta', type: { type: 'fixed', name: 'Delta', size: 4, logicalType: 'decimal', precision: 9, scale: 3 } },
          { name: 'attrs', type: { type: 'map', values: 'string' } },
        ],
      }),
    );
    // Written as a Java producer would: the long's exact 64 bits, the decimals' two's-complement unscaled integers.
    const text = (value: string) => Buffer.concat([avroLong(BigInt(Buffer.byteLength(value))), Buffer.from(value)]);
    const payload = (attrs: [string, string][]) =>
      Buffer.concat([
        avroLong(1_234_567_890_123_456_789n),
        avroLong(1_764_150_000_123_456_789n),
        avroLong(2n),
        Buffer.from([0x04, 0xd2]), // 1234 → 12.34
        Buffer.from([0xff, 0xff, 0xfb, 0x2e]), // -1234 → -1.234
        avroLong(BigInt(attrs.length)),
        ...attrs.flatMap(([key, item]) => [text(key), text(item)]),
        avroLong(0n),
      ]);
    expect(await decoder.decode(framed(21, payload([['color', 'red']])))).toEqual({
      // The nearest doubles, as JSON.parse reads the same digits.
      id: Number(1_234_567_890_123_456_789n),
      at: Number(1_764_150_000_123_456_789n),
      price: 12.34,
      delta: -1.234,
      attrs: { color: 'red' },
    });
    const poisoned = (await decoder.decode(framed(21, payload([['__proto__', 'x']])))) as { attrs: object };
    expect(Object.hasOwn(poisoned.attrs, '__proto__')).toBe(true);
    const refused = await Promise.resolve()
      .then(() => decodeFactValue(framed(21, payload([['__proto__', 'x']])), decoder))
      .catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'VALIDATION_ERROR', message: expect.stringMatching(/forbidden key at attrs\.__proto__/) });
  });

  it('reads an invalid decimal as its underlying bytes, as the Avro spec says', async () => {
    answers.set(
      22,
      schemaAnswer({
        type: 'record',
        name: 'Odd',
        namespace: 'x',
        fields: [
          { name: 'no_precision', type: { type: 'bytes', logicalType: 'decimal', scale: 2 } },
          { name: 'scale_over', type: { type: 'bytes', logicalType: 'decimal', precision: 2, scale: 5 } },
          { name: 'too_narrow', type: { type: 'fixed', name: 'One', size: 1, logicalType: 'decimal', precision: 10 } },
        ],
      }),
    );
    // Each bytes field: zigzag length 2, then 0x04 0xd2; the fixed: one byte 0x7f.
    const payload = Buffer.from([4, 0x04, 0xd2, 4, 0x04, 0xd2, 0x7f]);
    const raw = Buffer.from([0x04, 0xd2]).toString('latin1');
    expect(await decoder.decode(framed(22, payload))).toEqual({ no_precision: raw, scale_over: raw, too_narrow: '\x7f' });
  });

  it('dead-letters a corrupted Avro block count or a decimal over its precision, at once, naming the problem', async () => {
    answers.set(
      23,
      schemaAnswer({ type: 'record', name: 'Attrs', namespace: 'x', fields: [{ name: 'attrs', type: { type: 'map', values: 'string' } }] }),
    );
    answers.set(
      24,
      schemaAnswer({ type: 'record', name: 'Tags', namespace: 'x', fields: [{ name: 'amounts', type: { type: 'array', items: 'int' } }] }),
    );
    answers.set(
      25,
      schemaAnswer({
        type: 'record',
        name: 'Price',
        namespace: 'x',
        fields: [{ name: 'amount', type: { type: 'bytes', logicalType: 'decimal', precision: 10, scale: 2 } }],
      }),
    );
    // A map block of 2^40 entries (it looped for good), an array block of 2^32-1 items (out of memory), in 11 bytes.
    const cases = [
      [framed(23, Buffer.from('808080808040', 'hex')), 'a map block of 1099511627776 items cannot fit in the 0 bytes left'],
      [framed(24, Buffer.from('feffffff1f', 'hex')), 'an array block of 4294967295 items cannot fit in the 0 bytes left'],
      // 2^64-1 unscaled, 20 digits: it read as 184467440737095516.15.
      [framed(25, Buffer.from('1200ffffffffffffffff', 'hex')), 'a decimal at amount has 20 digits, more than its precision of 10'],
    ] as const;
    for (const [value, problem] of cases) {
      const error = await failureOf(value);
      expect(error).toMatchObject({ code: 'VALIDATION_ERROR', message: `value does not decode with schema id ${value[4]}: ${problem}` });
      expect(isRetryable(error)).toBe(false);
    }
  });

  it('decodes a JSON Schema value whose schema uses formats and another draft', async () => {
    answers.set(
      30,
      schemaAnswer(
        {
          $schema: 'https://json-schema.org/draft/2020-12/schema',
          type: 'object',
          properties: { facts: { type: 'object', properties: { at: { type: 'string', format: 'date-time' } } } },
          required: ['facts'],
          $defs: { unused: { type: 'number' } },
        },
        'JSON',
      ),
    );
    expect(await decoder.decode(framed(30, Buffer.from('{"facts":{"at":"2026-11-25T10:00:00Z"}}')))).toEqual({
      facts: { at: '2026-11-25T10:00:00Z' },
    });
    const mismatch = await failureOf(framed(30, Buffer.from('{"fact":{}}')));
    expect(mismatch).toMatchObject({
      code: 'VALIDATION_ERROR',
      message: "value does not decode with schema id 30: invalid payload: / must have required property 'facts'",
    });
    const wrongType = await failureOf(framed(30, Buffer.from('{"facts":{"at":7}}')));
    expect(wrongType?.message).toBe('value does not decode with schema id 30: invalid payload: /facts/at must be string');
    // As in a plain JSON value, a number a double cannot hold is refused, not recorded as null.
    expect(await failureOf(framed(30, Buffer.from('{"facts":{"amount":1e400}}')))).toMatchObject({
      code: 'VALIDATION_ERROR',
      message: 'value holds a number beyond the range of a double (±1.7976931348623157e308) at facts.amount',
    });
  });

  it('validates a JSON Schema value by the draft its schema declares: draft-04, 2019-09 and 2020-12 keywords as they mean', async () => {
    const facts = (properties: object) => ({ type: 'object', properties: { facts: { type: 'object', properties } }, required: ['facts'] });
    // draft-04: exclusiveMinimum is a boolean beside minimum (the draft-07 reader could not compile the schema at all).
    answers.set(
      31,
      schemaAnswer(
        { $schema: 'http://json-schema.org/draft-04/schema#', ...facts({ amt: { minimum: 0, exclusiveMinimum: true } }) },
        'JSON',
      ),
    );
    expect(await decoder.decode(framed(31, Buffer.from('{"facts":{"amt":5}}')))).toEqual({ facts: { amt: 5 } });
    expect((await failureOf(framed(31, Buffer.from('{"facts":{"amt":0}}'))))?.message).toBe(
      'value does not decode with schema id 31: invalid payload: /facts/amt must be > 0',
    );
    // 2020-12: prefixItems types each position, and items: false forbids more (draft-07 read items: false as "no items").
    const pair = { type: 'array', prefixItems: [{ type: 'string' }, { type: 'number' }], items: false };
    answers.set(32, schemaAnswer({ $schema: 'https://json-schema.org/draft/2020-12/schema', ...facts({ pair }) }, 'JSON'));
    expect(await decoder.decode(framed(32, Buffer.from('{"facts":{"pair":["x",1]}}')))).toEqual({ facts: { pair: ['x', 1] } });
    expect((await failureOf(framed(32, Buffer.from('{"facts":{"pair":[1,"x"]}}'))))?.message).toBe(
      'value does not decode with schema id 32: invalid payload: /facts/pair/0 must be string',
    );
    expect(await failureOf(framed(32, Buffer.from('{"facts":{"pair":["x",1,2]}}')))).toMatchObject({ code: 'VALIDATION_ERROR' });
    // 2019-09: dependentRequired.
    answers.set(
      33,
      schemaAnswer(
        {
          $schema: 'https://json-schema.org/draft/2019-09/schema',
          ...facts({ card: { type: 'object', dependentRequired: { pan: ['cvv'] } } }),
        },
        'JSON',
      ),
    );
    expect(await decoder.decode(framed(33, Buffer.from('{"facts":{"card":{"pan":"1","cvv":"2"}}}')))).toEqual({
      facts: { card: { pan: '1', cvv: '2' } },
    });
    expect((await failureOf(framed(33, Buffer.from('{"facts":{"card":{"pan":"1"}}}'))))?.message).toBe(
      'value does not decode with schema id 33: invalid payload: /facts/card must have property cvv when property pan is present',
    );
  });

  it("resolves a reference named relative to the root schema's $id, as Confluent and Apicurio serializers resolve it", async () => {
    versions.set(
      '/subjects/amount-rel/versions/1',
      JSON.stringify({
        subject: 'amount-rel',
        version: 1,
        id: 38,
        schema: JSON.stringify({ type: 'number', minimum: 0 }),
        schemaType: 'JSON',
      }),
    );
    answers.set(
      37,
      jsonAnswer({
        schemaType: 'JSON',
        schema: JSON.stringify({
          $id: 'https://example.com/schemas/fact.json',
          type: 'object',
          properties: { facts: { type: 'object', properties: { amount: { $ref: 'amount.json' } } } },
        }),
        references: [{ name: 'amount.json', subject: 'amount-rel', version: 1 }],
      }),
    );
    expect(await decoder.decode(framed(37, Buffer.from('{"facts":{"amount":5}}')))).toEqual({ facts: { amount: 5 } });
    expect((await failureOf(framed(37, Buffer.from('{"facts":{"amount":-1}}'))))?.message).toBe(
      'value does not decode with schema id 37: invalid payload: /facts/amount must be >= 0',
    );
  });

  it('resolves a JSON Schema reference by the name the reference gives it, as Confluent serializers write them, or by its $id', async () => {
    versions.set(
      '/subjects/amount/versions/1',
      JSON.stringify({ subject: 'amount', version: 1, id: 35, schema: JSON.stringify({ type: 'number', minimum: 0 }), schemaType: 'JSON' }),
    );
    versions.set(
      '/subjects/currency/versions/2',
      JSON.stringify({
        subject: 'currency',
        version: 2,
        id: 36,
        schema: JSON.stringify({ $id: 'https://schemas.example/currency.json', type: 'string', enum: ['EUR', 'USD'] }),
        schemaType: 'JSON',
      }),
    );
    answers.set(
      34,
      jsonAnswer({
        schemaType: 'JSON',
        schema: JSON.stringify({
          type: 'object',
          properties: {
            facts: {
              type: 'object',
              properties: { amount: { $ref: 'amount.json' }, currency: { $ref: 'https://schemas.example/currency.json' } },
            },
          },
        }),
        references: [
          { name: 'amount.json', subject: 'amount', version: 1 },
          { name: 'currency.json', subject: 'currency', version: 2 },
        ],
      }),
    );
    expect(await decoder.decode(framed(34, Buffer.from('{"facts":{"amount":5,"currency":"EUR"}}')))).toEqual({
      facts: { amount: 5, currency: 'EUR' },
    });
    expect((await failureOf(framed(34, Buffer.from('{"facts":{"amount":-1}}'))))?.message).toBe(
      'value does not decode with schema id 34: invalid payload: /facts/amount must be >= 0',
    );
    expect((await failureOf(framed(34, Buffer.from('{"facts":{"currency":"XXX"}}'))))?.message).toBe(
      'value does not decode with schema id 34: invalid payload: /facts/currency must be equal to one of the allowed values',
    );
  });

  it('decodes the Protobuf message the indexes name, with 64-bit integers as numbers and enums by name', async () => {
    const proto = `syntax = "proto3"; package p;
      message Other { string x = 1; }
      message FactMessage { Facts facts = 1; string domain = 2; message Nested { int64 n = 1; } }
      message Facts { int64 amount = 1; Tier tier = 2; bytes raw = 3; }
      enum Tier { BASIC = 0; GOLD = 1; }`;
    answers.set(40, schemaAnswer(proto, 'PROTOBUF'));
    const schema = (await registry.getSchema(40)) as unknown as {
      message: { parent: { lookupType(name: string): { encode(m: object): { finish(): Uint8Array }; fromObject(m: object): object } } };
    };
    const encode = (name: string, message: object) => {
      const type = schema.message.parent.lookupType(name);
      return Buffer.from(type.encode(type.fromObject(message)).finish());
    };
    const fact = encode('FactMessage', { facts: { amount: 7200, tier: 'GOLD', raw: Buffer.from('ok') }, domain: 'payments' });
    // Index path [1] (zigzag varints: count 1, index 1): the file's second message.
    expect(await decoder.decode(framed(40, fact, [2, 2]))).toEqual({
      facts: { amount: 7200, tier: 'GOLD', raw: Buffer.from('ok').toString('base64') },
      domain: 'payments',
    });
    // A single 0 is the first message; [1, 0] (count 2) the first message nested in the second.
    expect(await decoder.decode(framed(40, encode('Other', { x: 'y' }), [0]))).toEqual({ x: 'y' });
    expect(await decoder.decode(framed(40, encode('FactMessage.Nested', { n: 5 }), [4, 2, 0]))).toEqual({ n: 5 });
    expect(await failureOf(framed(40, fact, [2, 8]))).toMatchObject({
      code: 'VALIDATION_ERROR',
      message: 'value does not decode with schema id 40: the schema has no message at index path [4]',
    });
  });

  it('decodes Protobuf as its JSON twin: names as declared, an enum declared first, well-known types, referenced files', async () => {
    const common = 'syntax = "proto3"; package shared; message Card { string card_id = 1; }';
    versions.set('/subjects/shared-card/versions/3', JSON.stringify({ schema: common, schemaType: 'PROTOBUF' }));
    const proto = `syntax = "proto3"; package p;
      import "google/protobuf/timestamp.proto"; import "google/protobuf/wrappers.proto";
      import "google/protobuf/struct.proto"; import "google/protobuf/duration.proto"; import "shared/card.proto";
      enum Tier { BASIC = 0; GOLD = 1; }
      message FactMessage { Facts facts = 1; optional string session_id = 2; optional string fact_id = 3; }
      message Facts {
        int64 big_amount = 1; Tier tier = 2; google.protobuf.Timestamp seen_at = 3; google.protobuf.Int32Value retries = 4;
        google.protobuf.Struct extra = 5; google.protobuf.Duration took = 6; shared.Card card = 7;
        repeated google.protobuf.Timestamp history = 8; map<string, google.protobuf.StringValue> labels = 9;
      }`;
    answers.set(
      41,
      jsonAnswer({
        schema: proto,
        schemaType: 'PROTOBUF',
        references: [{ name: 'shared/card.proto', subject: 'shared-card', version: 3 }],
      }),
    );
    const root = new protobuf.Root();
    protobuf.parse(common, root, { keepCase: true });
    protobuf.parse(proto, root, { keepCase: true });
    for (const file of ['timestamp', 'wrappers', 'struct', 'duration'])
      root.addJSON(protobuf.common.get(`google/protobuf/${file}.proto`)!.nested!);
    const type = root.lookupType('p.FactMessage');
    const fact = type
      .encode(
        type.fromObject({
          facts: {
            big_amount: 7200,
            tier: 'GOLD',
            seen_at: { seconds: 1_764_115_200, nanos: 5_000_000 },
            retries: { value: 0 },
            extra: {
              fields: {
                channel: { stringValue: 'web' },
                score: { numberValue: 0.5 },
                tags: { listValue: { values: [{ boolValue: true }, { nullValue: 0 }] } },
              },
            },
            took: { seconds: -1, nanos: -500_000_000 },
            card: { card_id: 'c-1' },
            history: [{ seconds: 0 }],
            labels: { source: { value: 'pos' } },
          },
          session_id: 's-1',
          fact_id: 'f-1',
        }),
      )
      .finish();
    // The first message of the file is FactMessage (index 0), although an enum is declared before it.
    expect(await decoder.decode(framed(41, Buffer.from(fact), [0]))).toEqual({
      facts: {
        big_amount: 7200,
        tier: 'GOLD',
        seen_at: '2025-11-26T00:00:00.005Z',
        retries: 0,
        extra: { channel: 'web', score: 0.5, tags: [true, null] },
        took: '-1.500s',
        card: { card_id: 'c-1' },
        history: ['1970-01-01T00:00:00Z'],
        labels: { source: 'pos' },
      },
      session_id: 's-1',
      fact_id: 'f-1',
    });
  });

  it('reads Struct and Value whichever file supplies struct.proto, and the custom options descriptor.proto declares', async () => {
    const struct = `syntax = "proto3"; package google.protobuf;
      message Struct { map<string, Value> fields = 1; }
      message Value { oneof kind { NullValue null_value = 1; double number_value = 2; string string_value = 3; bool bool_value = 4;
        Struct struct_value = 5; ListValue list_value = 6; } }
      enum NullValue { NULL_VALUE = 0; }
      message ListValue { repeated Value values = 1; }`;
    versions.set('/subjects/google-struct/versions/1', JSON.stringify({ schema: struct, schemaType: 'PROTOBUF' }));
    const proto = `syntax = "proto3"; package q; import "google/protobuf/struct.proto"; import "google/protobuf/descriptor.proto";
      extend google.protobuf.FieldOptions { string pii = 50001; }
      message Event { google.protobuf.Struct attrs = 1; string card = 2 [(pii) = "mask"]; }`;
    const attrs = {
      fields: { amount: { number_value: 7200 }, tags: { list_value: { values: [{ bool_value: true }, { null_value: 0 }] } } },
    };
    const root = new protobuf.Root();
    protobuf.parse(struct, root, { keepCase: true });
    protobuf.parse(
      proto
        .replace('import "google/protobuf/descriptor.proto";', '')
        .replace(/extend[^}]*}/, '')
        .replace(' [(pii) = "mask"]', ''),
      root,
      {
        keepCase: true,
      },
    );
    const type = root.lookupType('q.Event');
    const event = Buffer.from(type.encode(type.fromObject({ attrs, card: '4111' })).finish());
    const expected = { attrs: { amount: 7200, tags: [true, null] }, card: '4111' };
    answers.set(
      42,
      jsonAnswer({
        schema: proto,
        schemaType: 'PROTOBUF',
        references: [{ name: 'google/protobuf/struct.proto', subject: 'google-struct', version: 1 }],
      }),
    );
    expect(await decoder.decode(framed(42, event, [0]))).toEqual(expected);
    // The same schema with struct.proto from the service's own copy.
    answers.set(43, jsonAnswer({ schema: proto, schemaType: 'PROTOBUF' }));
    expect(await decoder.decode(framed(43, event, [0]))).toEqual(expected);
  });

  it("imports Google's bundled files together (each type once), with their field names as declared", async () => {
    const proto = `syntax = "proto3"; package t; import "google/protobuf/any.proto"; import "google/protobuf/type.proto";
      import "google/protobuf/api.proto"; import "google/protobuf/source_context.proto";
      message Doc { string id = 1; google.protobuf.SourceContext origin = 2; google.protobuf.Any extra = 3; }`;
    answers.set(47, jsonAnswer({ schema: proto, schemaType: 'PROTOBUF' }));
    // Field 1 "d1"; field 2: a SourceContext whose field 1 (file_name) is "a.proto".
    const doc = Buffer.from([0x0a, 0x02, 0x64, 0x31, 0x12, 0x09, 0x0a, 0x07, ...Buffer.from('a.proto')]);
    expect(await decoder.decode(framed(47, doc, [0]))).toEqual({ id: 'd1', origin: { file_name: 'a.proto' } });
  });

  it('refuses Timestamps and Durations the proto3 JSON mapping cannot write, and names an import nothing provides', async () => {
    const proto = `syntax = "proto3"; package r; import "google/protobuf/timestamp.proto"; import "google/protobuf/duration.proto";
      message Times { google.protobuf.Timestamp at = 1; google.protobuf.Duration took = 2; }`;
    answers.set(44, jsonAnswer({ schema: proto, schemaType: 'PROTOBUF' }));
    const root = new protobuf.Root();
    protobuf.parse(proto, root, { keepCase: true });
    for (const file of ['timestamp', 'duration']) root.addJSON(protobuf.common.get(`google/protobuf/${file}.proto`)!.nested!);
    const type = root.lookupType('r.Times');
    const times = (message: object) => framed(44, Buffer.from(type.encode(type.fromObject(message)).finish()), [0]);
    expect(await decoder.decode(times({ at: { seconds: 253_402_300_799, nanos: 999_999_999 }, took: { seconds: -1, nanos: -5 } }))).toEqual(
      {
        at: '9999-12-31T23:59:59.999999999Z',
        took: '-1.000000005s',
      },
    );
    for (const broken of [
      { at: { seconds: 253_402_300_800 } },
      { at: { seconds: -62_135_596_801 } },
      { at: { seconds: 0, nanos: 1_500_000_000 } },
      { at: { seconds: 10, nanos: -5 } },
      { took: { seconds: 5, nanos: -5 } },
    ]) {
      expect(await failureOf(times(broken)), JSON.stringify(broken)).toMatchObject({
        code: 'VALIDATION_ERROR',
        message: expect.stringMatching(/^value does not decode with schema id 44: a (Timestamp|Duration) /),
      });
    }
    answers.set(
      45,
      jsonAnswer({
        schema: 'syntax = "proto3"; import "google/type/date.proto"; message D { google.type.Date on = 1; }',
        schemaType: 'PROTOBUF',
      }),
    );
    expect((await failureOf(framed(45, Buffer.from([]), [0])))?.message).toMatch(
      /^schema id 45 cannot be used to decode: it imports google\/type\/date\.proto, which is neither one of its references nor a file the service provides/,
    );
  });

  it('retries a Protobuf schema whose text came back as a page instead of JSON, then decodes it with the names declared', async () => {
    const proto = 'syntax = "proto3"; message S { string session_id = 1; }';
    answers.set(46, jsonAnswer({ schema: proto, schemaType: 'PROTOBUF' }));
    // The client's request gets the schema; the decoder's own gets a login page once.
    onceAnswers.set(46, [answers.get(46)!, { status: 200, type: 'text/html', body: '<!doctype html><title>Sign in</title>' }]);
    const value = framed(46, Buffer.from([0x0a, 0x01, 0x73]), [0]);
    expect(await failureOf(value)).toMatchObject({ code: 'UNAVAILABLE' });
    expect(await decoder.decode(value)).toEqual({ session_id: 's' });
  });

  it('retries a schema it cannot compile a few times, then dead-letters it (uncoded, INTERNAL_ERROR)', async () => {
    answers.set(50, schemaAnswer('{"type": "no-such-avro-type"}'));
    const error = await failureOf(framed(50, Buffer.from([2])));
    expect(error).not.toBeInstanceOf(AppError);
    expect(error?.message).toMatch(/^schema id 50 cannot be used to decode: /);
    expect(decideFailure(error, 3, 3)).toMatchObject({ kind: 'dead-letter', code: 'INTERNAL_ERROR' });
  });
});

describe('avroToJson', () => {
  it('writes values of logical types a client registered (Dates) as JSON does', () => {
    const type = { typeName: 'logical:timestamp-millis', isValid: () => true, fromBuffer: () => undefined };
    expect(avroToJson(type, new Date(Date.UTC(2026, 0, 2)))).toBe('2026-01-02T00:00:00.000Z');
  });
});
