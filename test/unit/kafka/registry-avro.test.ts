import avro from 'avsc';
import { describe, expect, it } from 'vitest';
import { type AvroType, avroReadOptions, avroToJson, float32Number, MAX_EMPTY_ITEMS } from '../../../src/kafka/registry-avro.ts';
import { avroLong } from '../../helpers/avro-bytes.ts';

/** Reads Avro bytes (hex or a buffer) with the registry client's options, as the decoder does. */
const read = (schema: object, data: string | Buffer): unknown => {
  const type = avro.Type.forSchema(schema as avro.Schema, { ...avroReadOptions }) as unknown as AvroType;
  return avroToJson(type, type.fromBuffer(typeof data === 'string' ? Buffer.from(data, 'hex') : data));
};

const decimal = (precision: number, scale: number) => ({ type: 'bytes', logicalType: 'decimal', precision, scale });
/** Avro `bytes` from hex: its length, then the bytes. */
const bytes = (hex: string) => Buffer.concat([avroLong(hex.length / 2), Buffer.from(hex, 'hex')]);
/** An Avro `string`: its length, then its UTF-8. */
const text = (value: string) => Buffer.concat([avroLong(value.length), Buffer.from(value)]);

describe('Avro block counts', () => {
  it('refuses a map block claiming 2^40 entries at once, where it looped without end', () => {
    const schema = { type: 'record', name: 'Attrs', fields: [{ name: 'attrs', type: { type: 'map', values: 'string' } }] };
    expect(() => read(schema, avroLong(2n ** 40n))).toThrow('a map block of 1099511627776 items cannot fit in the 0 bytes left');
  });

  it('refuses an array block claiming 2^32-1 items before allocating them, where the heap ran out', () => {
    const schema = { type: 'record', name: 'Tags', fields: [{ name: 'amounts', type: { type: 'array', items: 'int' } }] };
    expect(() => read(schema, avroLong(2 ** 32 - 1))).toThrow('an array block of 4294967295 items cannot fit in the 0 bytes left');
    // Three bytes left for a block of four ints.
    expect(() => read(schema, Buffer.concat([avroLong(4), avroLong(1), avroLong(2), avroLong(3)]))).toThrow(
      'an array block of 4 items cannot fit in the 3 bytes left',
    );
  });

  it(`caps items that take no bytes (null, empty records) at ${MAX_EMPTY_ITEMS} in one value, nested arrays counted together`, () => {
    const nulls = { type: 'array', items: 'null' };
    expect(() => read(nulls, avroLong(2 ** 32 - 1))).toThrow(`an array holds more than ${MAX_EMPTY_ITEMS} items that take no bytes`);
    const nested = { type: 'array', items: nulls };
    const inner = Buffer.concat([avroLong(60_000), avroLong(0)]);
    expect(() => read(nested, Buffer.concat([avroLong(2), inner, inner, avroLong(0)]))).toThrow(
      `an array holds more than ${MAX_EMPTY_ITEMS} items that take no bytes`,
    );
    const empties = { type: 'array', items: { type: 'record', name: 'Empty', fields: [] } };
    expect(read(empties, Buffer.concat([avroLong(MAX_EMPTY_ITEMS), avroLong(0)]))).toHaveLength(MAX_EMPTY_ITEMS);
  });

  it('reads valid arrays and maps as before, blocks with a negative count and their byte size included', () => {
    const schema = {
      type: 'record',
      name: 'Blocks',
      fields: [
        { name: 'ids', type: { type: 'array', items: 'int' } },
        { name: 'attrs', type: { type: 'map', values: 'string' } },
        { name: 'none', type: { type: 'array', items: 'null' } },
      ],
    };
    const encoded = Buffer.concat([
      ...[avroLong(-3), avroLong(3), avroLong(1), avroLong(2), avroLong(3), avroLong(2), avroLong(4), avroLong(5), avroLong(0)],
      ...[avroLong(-1), avroLong(4), text('a'), text('x'), avroLong(1), text('b'), text('y'), avroLong(0)],
      ...[avroLong(2), avroLong(0)],
    ]);
    expect(read(schema, encoded)).toEqual({ ids: [1, 2, 3, 4, 5], attrs: { a: 'x', b: 'y' }, none: [null, null] });
  });
});

describe('Avro floats', () => {
  it('reads a float as the shortest decimal of its 32 bits, in records, unions, arrays and maps; doubles as they are', () => {
    const schema = {
      type: 'record',
      name: 'Measures',
      fields: [
        { name: 'f', type: 'float' },
        { name: 'maybe', type: ['null', 'float'] },
        { name: 'either', type: ['int', 'float'] },
        { name: 'list', type: { type: 'array', items: 'float' } },
        { name: 'byName', type: { type: 'map', values: 'float' } },
        { name: 'inner', type: { type: 'record', name: 'Inner', fields: [{ name: 'x', type: 'float' }] } },
        { name: 'd', type: 'double' },
        { name: 'nan', type: 'float' },
      ],
    };
    const encoded = avro.Type.forSchema(schema as avro.Schema).toBuffer({
      f: 1.1,
      maybe: 0.1,
      either: { float: 0.3 },
      list: [2.5, 3.3, 16_777_217],
      byName: { k: 1e-7 },
      inner: { x: 0.7 },
      d: 1.1,
      nan: Number.NaN,
    });
    expect(read(schema, encoded)).toEqual({
      f: 1.1,
      maybe: 0.1,
      either: 0.3,
      // 2^24 + 1 has no float: its nearest float is 2^24.
      list: [2.5, 3.3, 16_777_216],
      byName: { k: 1e-7 },
      inner: { x: 0.7 },
      d: 1.1,
      nan: null,
    });
  });

  it('gives the shortest decimal that reads back to the same float32, and NaN and infinities unchanged', () => {
    expect(float32Number(Math.fround(1.1))).toBe(1.1);
    expect(float32Number(Math.fround(3.4028234663852886e38))).toBe(3.4028235e38);
    expect(float32Number(Math.fround(1.401298464324817e-45))).toBe(1e-45);
    expect(float32Number(0)).toBe(0);
    expect(float32Number(Number.POSITIVE_INFINITY)).toBe(Number.POSITIVE_INFINITY);
    expect(float32Number(Number.NaN)).toBeNaN();
  });
});

describe('Avro decimals', () => {
  const huge = `7f${'ff'.repeat(199)}`; // 2^1599 - 1: 482 digits

  it('refuses a decimal with more digits than its precision, naming where it is, where it read as a wrong number or null', () => {
    const schema = {
      type: 'record',
      name: 'Payment',
      fields: [
        { name: 'amount', type: decimal(10, 2) },
        { name: 'fees', type: { type: 'map', values: ['null', decimal(3, 1)] } },
      ],
    };
    const payment = (amount: string, fee: string) =>
      Buffer.concat([bytes(amount), avroLong(1), avroLong(1), Buffer.from('x'), avroLong(1), bytes(fee), avroLong(0)]);
    expect(read(schema, payment('04d2', '03e7'))).toEqual({ amount: 12.34, fees: { x: 99.9 } });
    expect(() => read(schema, payment('00ffffffffffffffff', '03e7'))).toThrow(
      'a decimal at amount has 20 digits, more than its precision of 10',
    );
    expect(() => read(schema, payment(huge, '03e7'))).toThrow('a decimal at amount has 482 digits, more than its precision of 10');
    expect(() => read(schema, payment('04d2', '2710'))).toThrow('a decimal at fees.x has 5 digits, more than its precision of 3');
  });

  it('says a value cut short before or inside a decimal is truncated, where it failed on reading a property of nothing', () => {
    const schema = {
      type: 'record',
      name: 'Cut',
      fields: [
        { name: 'name', type: 'string' },
        { name: 'amount', type: decimal(4, 2) },
      ],
    };
    const whole = Buffer.concat([avroLong(11), Buffer.from('hello world'), bytes('0100')]);
    expect(read(schema, whole)).toEqual({ name: 'hello world', amount: 2.56 });
    for (let length = 0; length < whole.length; length += 1)
      expect(() => read(schema, whole.subarray(0, length))).toThrow('truncated buffer');
  });

  it('refuses a decimal within its precision that no double can hold, as 1e400 is refused in JSON', () => {
    const schema = { type: 'record', name: 'Wide', fields: [{ name: 'amount', type: decimal(500, 0) }] };
    expect(() => read(schema, bytes(huge))).toThrow('a decimal at amount is beyond the range of a double (±1.7976931348623157e308)');
  });
});

describe('Avro unions', () => {
  const float = (value: number) => {
    const buffer = Buffer.alloc(4);
    buffer.writeFloatLE(value);
    return buffer;
  };

  it('reads a value as the branch it was written with, where a float branch shortened a long or decimal it could hold', () => {
    const schema = {
      type: 'record',
      name: 'Mixed',
      fields: [
        { name: 'v', type: ['null', 'float', 'long'] },
        { name: 'w', type: ['null', 'float', decimal(12, 0)] },
        { name: 'x', type: ['null', 'long', 'float'] },
      ],
    };
    // 2^40 and 1,073,741,952 are exactly floats; the float 1,234,567,936 reads as 1234568000, its shortest decimal.
    const value = Buffer.concat([avroLong(2), avroLong(2 ** 40), avroLong(2), bytes('40000080'), avroLong(2), float(1_234_567_936)]);
    expect(read(schema, value)).toEqual({ v: 1_099_511_627_776, w: 1_073_741_952, x: 1_234_568_000 });
  });

  it('refuses a decimal past its precision inside a nullable record, map or array, where the whole value read as null', () => {
    const schema = {
      type: 'record',
      name: 'Nested',
      fields: [
        {
          name: 'rec',
          type: [
            'null',
            {
              type: 'record',
              name: 'R',
              fields: [
                { name: 'd', type: decimal(4, 2) },
                { name: 'z', type: 'string' },
              ],
            },
          ],
        },
        { name: 'mp', type: ['null', { type: 'map', values: decimal(4, 2) }] },
        { name: 'ar', type: ['null', { type: 'array', items: decimal(4, 2) }] },
      ],
    };
    const good = bytes('04d2');
    const bad = bytes('010000');
    const value = (rec: Buffer, map: Buffer, array: Buffer) =>
      Buffer.concat([
        avroLong(1),
        rec,
        text('zz'),
        avroLong(1),
        avroLong(1),
        text('k'),
        map,
        avroLong(0),
        avroLong(1),
        avroLong(1),
        array,
        avroLong(0),
      ]);
    expect(read(schema, value(good, good, good))).toEqual({ rec: { d: 12.34, z: 'zz' }, mp: { k: 12.34 }, ar: [12.34] });
    expect(() => read(schema, value(bad, good, good))).toThrow('a decimal at rec.d has 5 digits, more than its precision of 4');
    expect(() => read(schema, value(good, bad, good))).toThrow('a decimal at mp.k has 5 digits, more than its precision of 4');
    expect(() => read(schema, value(good, good, bad))).toThrow('a decimal at ar[0] has 5 digits, more than its precision of 4');
  });
});
