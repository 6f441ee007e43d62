// Avro values read along their writer schema into the JSON a producer would have sent: rules see the same facts either way.
import avro from 'avsc';
import { jsonPath } from '../contracts/poisoning-keys.ts';
import { toPlainJson } from './fact-codec.ts';

/**
 * Longs as numbers: past 2^53 they lose precision, as the same number does in a JSON fact, where avsc's own long type
 * refuses the value (and 64-bit ids, nanosecond times would be dead-lettered).
 */
const longAsNumber = avro.types.LongType.__with({
  fromBuffer: (buffer: Buffer) => Number(buffer.readBigInt64LE()),
  toBuffer: (value: number) => {
    const buffer = Buffer.alloc(8);
    buffer.writeBigInt64LE(BigInt(value));
    return buffer;
  },
  fromJSON: Number,
  toJSON: Number,
  isValid: (value: unknown) => Number.isInteger(value),
  compare: (a: number, b: number) => (a === b ? 0 : a < b ? -1 : 1),
});

/** The reading position avsc hands a type's `_read`: reading past the end does not fail, it moves `pos` past `buf`. */
interface Tap {
  readonly buf: Buffer;
  pos: number;
  readLong(): number;
  skipLong(): void;
  readString(): string;
}

/** Most items taking no bytes (null, an empty record) one value may hold: nothing in its bytes bounds how many it claims. */
export const MAX_EMPTY_ITEMS = 100_000;
/** Such items read so far, per value being read (each read has its own tap). */
const emptyItemsRead = new WeakMap<Tap, number>();

/**
 * The item count of an Avro block (a negative count is followed by the block's size in bytes), 0 at the end. A corrupted
 * count (2^40) is refused: avsc would loop or allocate that many times, reading nothing past the end.
 */
function blockCount(tap: Tap, what: string, itemsTakeBytes: boolean): number {
  let count = tap.readLong();
  if (count < 0) {
    tap.skipLong();
    count = -count;
  }
  if (count === 0) return 0;
  if (itemsTakeBytes) {
    // Every item takes at least a byte (a key's length, an int, a union's branch...).
    const left = Math.max(tap.buf.length - tap.pos, 0);
    if (count > left) throw new Error(`${what} block of ${count} items cannot fit in the ${left} bytes left`);
  } else {
    const total = (emptyItemsRead.get(tap) ?? 0) + count;
    if (total > MAX_EMPTY_ITEMS) throw new Error(`${what} holds more than ${MAX_EMPTY_ITEMS} items that take no bytes`);
    emptyItemsRead.set(tap, total);
  }
  return count;
}

/** Fails as avsc does at the end of a read, but at once, so a corrupted count stops at the end of the bytes. */
function checkInside(tap: Tap): void {
  if (tap.pos > tap.buf.length) throw new Error('truncated buffer');
}

/** Whether values of a type can take no bytes at all (null, a fixed of size 0, a record of such fields). */
function takesNoBytes(type: AvroType): boolean {
  if (type.typeName === 'null') return true;
  if (type.typeName === 'fixed') return type.size === 0;
  if (type.typeName === 'record' || type.typeName === 'error') return (type.fields ?? []).every((field) => takesNoBytes(field.type));
  return type.underlyingType !== undefined && takesNoBytes(type.underlyingType);
}

/** avsc's map with every key as an own property: its own reader assigns `__proto__` as the object's prototype, dropping it. */
class OwnKeysMapType extends avro.types.MapType {
  _read(tap: Tap): Record<string, unknown> {
    const values = this.valuesType as { _read(tap: Tap): unknown };
    const map: Record<string, unknown> = {};
    for (let count = blockCount(tap, 'a map', true); count !== 0; count = blockCount(tap, 'a map', true)) {
      for (let i = 0; i < count; i += 1) {
        setOwn(map, tap.readString(), values._read(tap));
        checkInside(tap);
      }
    }
    return map;
  }
}

/** avsc's array, with its block counts checked: its own reader allocates `new Array(count)` first (2^32 items, out of memory). */
class BoundedArrayType extends avro.types.ArrayType {
  #itemsTakeBytes: boolean | undefined;

  _read(tap: Tap): unknown[] {
    const items = this.itemsType as unknown as AvroType & { _read(tap: Tap): unknown };
    // Found at the first read: a named items type may be completed after this array was built.
    this.#itemsTakeBytes ??= !takesNoBytes(items);
    const itemsTakeBytes = this.#itemsTakeBytes;
    const array: unknown[] = [];
    for (let count = blockCount(tap, 'an array', itemsTakeBytes); count !== 0; count = blockCount(tap, 'an array', itemsTakeBytes)) {
      for (let i = 0; i < count; i += 1) {
        array.push(items._read(tap));
        checkInside(tap);
      }
    }
    return array;
  }
}

/** A decimal read that no number can stand for, refused by avroToJson, which knows where in the value it is. */
class UnreadableDecimal {
  readonly problem: string;

  constructor(problem: string) {
    this.problem = problem;
  }
}

/** Avro `decimal` (bytes or fixed: a big-endian two's-complement unscaled integer) as the number a JSON fact would hold. */
class DecimalAsNumber extends avro.types.LogicalType {
  readonly precision: number;
  readonly scale: number;

  constructor(schema: avro.Schema, opts?: unknown) {
    super(schema, opts);
    const { precision, scale = 0 } = schema as { precision?: unknown; scale?: unknown };
    const size = (this.underlyingType as { size?: number }).size;
    // An invalid decimal is read as its underlying type (the Avro spec): throwing here makes avsc fall back to it.
    if (!Number.isInteger(precision) || (precision as number) < 1) throw new Error('decimal precision must be a positive integer');
    if (!Number.isInteger(scale) || (scale as number) < 0 || (scale as number) > (precision as number)) {
      throw new Error('decimal scale must be an integer from 0 to the precision');
    }
    if (size !== undefined && (precision as number) > Math.floor(Math.log10(2 ** (8 * size - 1) - 1))) {
      throw new Error(`a fixed of ${size} bytes cannot hold ${String(precision)} digits`);
    }
    this.precision = precision as number;
    this.scale = scale as number;
  }

  protected override _fromValue(value: Buffer | undefined): number | UnreadableDecimal {
    // Bytes read past the end of a truncated value are none: fail as avsc does once the read is over.
    if (value === undefined) throw new Error('truncated buffer');
    if (value.length === 0) return 0;
    let unscaled = BigInt.asIntN(value.length * 8, BigInt(`0x${value.toString('hex')}`));
    const negative = unscaled < 0n;
    if (negative) unscaled = -unscaled;
    const unscaledDigits = unscaled.toString();
    // A corrupted or mis-written value: read as a number it would be some other amount, or Infinity, recorded as null.
    if (unscaledDigits.length > this.precision) {
      return new UnreadableDecimal(`has ${unscaledDigits.length} digits, more than its precision of ${this.precision}`);
    }
    const digits = unscaledDigits.padStart(this.scale + 1, '0');
    const text = this.scale === 0 ? digits : `${digits.slice(0, -this.scale)}.${digits.slice(-this.scale)}`;
    const number = Number(negative ? `-${text}` : text);
    return Number.isFinite(number) ? number : new UnreadableDecimal('is beyond the range of a double (±1.7976931348623157e308)');
  }

  protected override _toValue(value: unknown): Buffer | undefined {
    if (typeof value !== 'number' || !Number.isFinite(value)) return undefined;
    let unscaled = BigInt(Math.round(value * 10 ** this.scale));
    const bytes: number[] = [];
    do {
      bytes.unshift(Number(unscaled & 0xffn));
      unscaled >>= 8n;
    } while (unscaled !== 0n && unscaled !== -1n);
    const sign = unscaled < 0n ? 0xff : 0;
    // The sign bit of the first byte must be the value's; a fixed is sign-extended to its size.
    if ((bytes[0]! & 0x80) !== (sign & 0x80)) bytes.unshift(sign);
    const size = (this.underlyingType as { size?: number }).size ?? bytes.length;
    while (bytes.length < size) bytes.unshift(sign);
    return Buffer.from(bytes);
  }

  protected override _resolve(type: avro.Type): ((value: unknown) => unknown) | undefined {
    return avro.Type.isType(type, 'logical:decimal') ? (value) => value : undefined;
  }
}

/**
 * avsc options for the registry client's Avro schemas: longs and decimals as numbers, map keys all kept, so a value reads
 * as its JSON twin would and a `__proto__` map key reaches the poisoning check. Every union value comes wrapped in its
 * branch's name, so it is read as the branch it was written with: guessed from the value, a long that a float can hold
 * read as a float (shortened), and a branch holding an unreadable decimal matched no branch at all (read as null).
 */
export const avroReadOptions = {
  wrapUnions: true,
  logicalTypes: { decimal: DecimalAsNumber },
  typeHook: (schema: unknown, opts: unknown): avro.Type | undefined => {
    if (schema === 'long') return longAsNumber;
    if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return undefined;
    const { type } = schema as { type?: unknown };
    // Also a long of a logical type read as its long (timestamps in micro- or nanoseconds pass 2^53).
    if (type === 'long') return longAsNumber;
    if (type === 'map') return new OwnKeysMapType(schema as avro.Schema, opts);
    if (type === 'array') return new BoundedArrayType(schema as avro.Schema, opts);
    return undefined;
  },
};

/** The parts of an avsc Type this module reads (the registry client hands back avsc types for Avro schemas). */
export interface AvroType {
  readonly typeName: string;
  readonly fields?: readonly { readonly name: string; readonly type: AvroType }[];
  readonly valuesType?: AvroType;
  readonly itemsType?: AvroType;
  readonly types?: readonly AvroType[];
  readonly branchName?: string;
  readonly size?: number;
  readonly underlyingType?: AvroType;
  isValid(value: unknown): boolean;
  fromBuffer(buffer: Buffer): unknown;
}

export function isAvroType(schema: unknown): schema is AvroType {
  const type = schema as Partial<AvroType> | null;
  return typeof type?.typeName === 'string' && typeof type.fromBuffer === 'function' && typeof type.isValid === 'function';
}

/**
 * A decoded Avro value as plain JSON data. Union values (read wrapped, as `{"long": 7200}`) come out as their branch's
 * value; bytes and fixed become text with one character per byte (Avro's own JSON encoding); longs past 2^53 lose
 * precision as JSON numbers do (avroReadOptions); floats are the shortest decimal of their 32 bits; NaN and infinities,
 * which JSON cannot hold, become null. Throws on a decimal no number stands for, naming its path.
 */
export function avroToJson(type: AvroType, value: unknown, path = ''): unknown {
  if (value === null || value === undefined) return null;
  if (value instanceof UnreadableDecimal) throw new Error(`a decimal${path === '' ? '' : ` at ${path}`} ${value.problem}`);
  switch (type.typeName) {
    case 'record':
    case 'error': {
      const out: Record<string, unknown> = {};
      const record = value as Record<string, unknown>;
      for (const field of type.fields ?? []) {
        setOwn(out, field.name, avroToJson(field.type, record[field.name], jsonPath(path, field.name, false)));
      }
      return out;
    }
    case 'map': {
      const out: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(value as Record<string, unknown>))
        setOwn(out, key, avroToJson(type.valuesType as AvroType, item, jsonPath(path, key, false)));
      return out;
    }
    case 'array':
      return (value as unknown[]).map((item, index) => avroToJson(type.itemsType as AvroType, item, jsonPath(path, String(index), true)));
    case 'union:wrapped': {
      const [branch] = Object.keys(value as object);
      const branchType = type.types?.find((candidate) => candidate.branchName === branch);
      return branchType === undefined || branch === undefined
        ? null
        : avroToJson(branchType, (value as Record<string, unknown>)[branch], path);
    }
    case 'bytes':
    case 'fixed':
      return Buffer.isBuffer(value) ? value.toString('latin1') : null;
    case 'float':
      return Number.isFinite(value) ? float32Number(value as number) : null;
    case 'long':
    case 'abstract:long':
    case 'int':
    case 'double': {
      const number = typeof value === 'bigint' ? Number(value) : (value as number);
      return Number.isFinite(number) ? number : null;
    }
    default:
      // Logical types (decimals, read as numbers; Dates when a client registers them) as JSON writes them; boolean,
      // string, enum are JSON.
      return type.typeName.startsWith('logical:') ? toPlainJson(value) : value;
  }
}

/**
 * A 32-bit float as the shortest decimal that reads back to the same float (1.1, not 1.100000023841858), as proto3 JSON
 * printers write it: a rule `f <= 1.1` then holds alike for a JSON, Avro or Protobuf fact. NaN and infinities unchanged.
 */
export function float32Number(value: number): number {
  // Nine significant digits always read back to the same float32.
  for (let digits = 1; digits <= 9; digits += 1) {
    const shorter = Number(value.toPrecision(digits));
    if (Math.fround(shorter) === value) return shorter;
  }
  return value;
}

/** An own property even for `__proto__` (a valid Avro name), as JSON.parse makes it, never the object's prototype. */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}
