import { describe, expect, it } from 'vitest';
import { MAX_FACT_ARRAY, MAX_FACT_DEPTH, nestsDeeperThan } from '../../../src/contracts/json-depth.ts';
import { poisoningKeyPath } from '../../../src/contracts/poisoning-keys.ts';
import { AppError } from '../../../src/errors.ts';
import {
  decodeFactValue,
  parseFactMessage,
  parseJsonValue,
  toPlainJson,
  valueFormat,
  wireSchemaId,
} from '../../../src/kafka/fact-codec.ts';

function validationDetail(work: () => unknown): string {
  try {
    work();
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe('VALIDATION_ERROR');
    return (error as AppError).message;
  }
  throw new Error('expected a VALIDATION_ERROR');
}

const json = (value: unknown) => Buffer.from(JSON.stringify(value));

describe('valueFormat', () => {
  it('reads a value starting with the magic byte 0 as schema-registry framed and anything else as JSON', () => {
    expect(valueFormat(Buffer.from([0, 0, 0, 0, 7, 1]))).toBe('registry');
    expect(valueFormat(Buffer.from('{"facts":{}}'))).toBe('json');
    expect(valueFormat(Buffer.from(' {"facts":{}}'))).toBe('json');
    expect(valueFormat(Buffer.alloc(0))).toBe('json');
  });
});

describe('wireSchemaId', () => {
  it('reads the 4-byte big-endian schema id after the magic byte', () => {
    expect(wireSchemaId(Buffer.from([0, 0, 0, 1, 2, 99]))).toBe(258);
  });

  it('rejects a frame shorter than its 5-byte header', () => {
    expect(validationDetail(() => wireSchemaId(Buffer.from([0, 0, 1])))).toBe(
      'value starts with the schema registry magic byte but has only 3 bytes',
    );
  });
});

describe('parseJsonValue', () => {
  it('parses JSON text', () => {
    expect(parseJsonValue(json({ facts: { a: 1 } }))).toEqual({ facts: { a: 1 } });
  });

  it('rejects a missing value (tombstone) and an empty one', () => {
    expect(validationDetail(() => parseJsonValue(null))).toBe('message has no value');
    expect(validationDetail(() => parseJsonValue(Buffer.alloc(0)))).toBe('message has no value');
  });

  it('rejects a number a double cannot hold, naming where', () => {
    expect(validationDetail(() => parseJsonValue(Buffer.from('{"facts":{"a":{"b":1E400}}}')))).toBe(
      'value holds a number beyond the range of a double (±1.7976931348623157e308) at facts.a.b',
    );
    expect(parseJsonValue(Buffer.from('{"facts":{"a":"1E400","b":1e308}}'))).toEqual({ facts: { a: '1E400', b: 1e308 } });
  });

  it('rejects text that is not JSON, saying so', () => {
    expect(validationDetail(() => parseJsonValue(Buffer.from('{"facts": ')))).toMatch(/^value is not valid JSON: /);
    expect(validationDetail(() => parseJsonValue(Buffer.from('not json')))).toMatch(/^value is not valid JSON: /);
  });
});

describe('parseFactMessage', () => {
  it('accepts facts with an optional domain, session_id and fact_id', () => {
    expect(parseFactMessage({ facts: { amount: 10 }, domain: 'payments', session_id: 's-1', fact_id: 'f-1' })).toEqual({
      facts: { amount: 10 },
      domain: 'payments',
      session_id: 's-1',
      fact_id: 'f-1',
    });
  });

  it('treats null optional fields (as Avro writes them) as absent', () => {
    expect(parseFactMessage({ facts: {}, domain: null, session_id: null, fact_id: null })).toEqual({
      facts: {},
      domain: null,
      session_id: null,
      fact_id: null,
    });
  });

  it('rejects a message without facts', () => {
    expect(validationDetail(() => parseFactMessage({ domain: 'x' }))).toBe(
      'fact message does not match the schema: facts: Invalid input: expected record, received undefined',
    );
  });

  it('rejects facts that are not an object', () => {
    for (const facts of [[1, 2], 'text', 42, null]) {
      expect(validationDetail(() => parseFactMessage({ facts }))).toMatch(/^fact message does not match the schema: facts: /);
    }
  });

  it('rejects a value that is not an object at all', () => {
    expect(validationDetail(() => parseFactMessage([1]))).toMatch(/^fact message does not match the schema: value: /);
  });

  it('rejects fields of the wrong type, naming each', () => {
    const detail = validationDetail(() => parseFactMessage({ facts: {}, domain: 7, session_id: false }));
    expect(detail).toContain('domain: ');
    expect(detail).toContain('session_id: ');
  });

  it('rejects unknown top-level fields', () => {
    expect(validationDetail(() => parseFactMessage({ facts: {}, fact: {} }))).toContain('Unrecognized key: "fact"');
  });

  it('rejects an empty domain', () => {
    expect(validationDetail(() => parseFactMessage({ facts: {}, domain: '  ' }))).toContain('domain: domain must not be empty');
  });
});

describe('toPlainJson', () => {
  it('turns class instances and bigints into plain JSON data', () => {
    class Record {
      amount = 5;
      big = 7n;
    }
    const plain = toPlainJson({ facts: new Record() });
    expect(plain).toEqual({ facts: { amount: 5, big: 7 } });
    expect(Object.getPrototypeOf((plain as { facts: object }).facts)).toBe(Object.prototype);
  });
});

describe('decodeFactValue', () => {
  it('decodes a JSON value synchronously, with the text it was read from', () => {
    const text = '{ "facts": {"a": "b"},\n "domain": "d" }';
    expect(decodeFactValue(Buffer.from(text), undefined)).toEqual({ fact: { facts: { a: 'b' }, domain: 'd' }, json: text });
  });

  it('rejects a registry-framed value when no registry is configured', () => {
    expect(validationDetail(() => decodeFactValue(Buffer.from([0, 0, 0, 0, 1, 2]), undefined))).toBe(
      'value is in the schema registry wire format but SCHEMA_REGISTRY_URL is not configured',
    );
  });

  it('sends a registry-framed value through the registry decoder and checks the result', async () => {
    const seen: Buffer[] = [];
    const decoder = {
      decode: async (value: Buffer) => {
        seen.push(value);
        return { facts: { amount: 3 } };
      },
    };
    const framed = Buffer.from([0, 0, 0, 0, 9, 42]);
    await expect(decodeFactValue(framed, decoder)).resolves.toEqual({ fact: { facts: { amount: 3 } }, json: undefined });
    expect(seen).toEqual([framed]);
  });

  it('rejects a registry-decoded value that is not a fact message', async () => {
    const decoder = { decode: async () => ({ amount: 3 }) };
    await expect(decodeFactValue(Buffer.from([0, 0, 0, 0, 9, 42]), decoder)).rejects.toMatchObject({
      code: 'VALIDATION_ERROR',
      message: expect.stringContaining('facts: '),
    });
  });
});

describe('fact depth', () => {
  const nested = (levels: number) => {
    let value: Record<string, unknown> = { leaf: 1 };
    for (let level = 1; level < levels; level++) value = { child: value };
    return value;
  };

  it('accepts facts nested as deep as POST /api/v1/evaluate allows', () => {
    expect(nestsDeeperThan(nested(MAX_FACT_DEPTH), MAX_FACT_DEPTH)).toBe(false);
    expect(parseFactMessage({ facts: nested(MAX_FACT_DEPTH) }).facts).toEqual(nested(MAX_FACT_DEPTH));
  });

  it('rejects deeper facts', () => {
    expect(validationDetail(() => parseFactMessage({ facts: nested(MAX_FACT_DEPTH + 1) }))).toBe(
      `fact message does not match the schema: facts: must not be nested deeper than ${MAX_FACT_DEPTH} levels`,
    );
  });

  it('accepts arrays of up to 10,000 elements, as POST /api/v1/evaluate does, and rejects longer ones', () => {
    const items = (length: number) => ({ order: { items: Array.from({ length }, () => ({})) } });
    expect(parseFactMessage({ facts: items(MAX_FACT_ARRAY) }).facts).toEqual(items(MAX_FACT_ARRAY));
    expect(validationDetail(() => parseFactMessage({ facts: items(MAX_FACT_ARRAY + 1) }))).toBe(
      'fact message does not match the schema: facts: must not hold an array of more than 10,000 elements',
    );
  });

  it('counts arrays as levels too', () => {
    expect(nestsDeeperThan({ a: [[1]] }, 2)).toBe(true);
    expect(nestsDeeperThan({ a: [1] }, 2)).toBe(false);
  });
});

describe('prototype poisoning', () => {
  it('rejects an own __proto__ key anywhere, naming where', () => {
    expect(validationDetail(() => parseJsonValue(Buffer.from('{"facts":{"a":[{"__proto__":{"admin":true}}]}}')))).toBe(
      'value contains the forbidden key at facts.a[0].__proto__',
    );
  });

  it('rejects a constructor object carrying prototype', () => {
    expect(validationDetail(() => parseJsonValue(Buffer.from('{"facts":{"constructor":{"prototype":{}}}}')))).toBe(
      'value contains the forbidden key at facts.constructor',
    );
  });

  it('rejects the same keys spelled with \\u escapes', () => {
    expect(validationDetail(() => parseJsonValue(Buffer.from('{"facts":{"__pro\\u0074o__":{"admin":true},"a":1}}')))).toBe(
      'value contains the forbidden key at facts.__proto__',
    );
    expect(validationDetail(() => parseJsonValue(Buffer.from('{"facts":{"c\\u006fnstructor":{"prototype":{"x":1}}}}')))).toBe(
      'value contains the forbidden key at facts.constructor',
    );
    expect(parseJsonValue(Buffer.from('{"facts":{"caf\\u00e9":1}}'))).toEqual({ facts: { café: 1 } });
  });

  it('rejects them in a value decoded through the schema registry too', async () => {
    const registry = { decode: async () => JSON.parse('{"facts":{"__proto__":{"x":1},"a":1}}') as unknown };
    const framed = Buffer.from([0, 0, 0, 0, 7, 1]);
    const error = await Promise.resolve(decodeFactValue(framed, registry)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).message).toBe('value contains the forbidden key at facts.__proto__');
  });

  it('accepts an ordinary field named constructor', () => {
    expect(parseJsonValue(Buffer.from('{"facts":{"constructor":"Ford"}}'))).toEqual({ facts: { constructor: 'Ford' } });
    expect(poisoningKeyPath({ facts: { constructor: 'Ford' } })).toBeUndefined();
  });
});
