// Avro values read along their writer schema into the JSON a producer would have sent: rules see the same facts either way.
import avro from 'avsc';
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

/** The reading position avsc hands a type's `_read`. */
interface Tap {
  readLong(): number;
  skipLong(): void;
  readString(): string;
}

/** avsc's map with every key as an own property: its own reader assigns `__proto__` as the object's prototype, dropping it. */
class OwnKeysMapType extends avro.types.MapType {
  _read(tap: Tap): Record<string, unknown> {
    const values = this.valuesType as { _read(tap: Tap): unknown };
    const map: Record<string, unknown> = {};
    for (let count = tap.readLong(); count !== 0; count = tap.readLong()) {
      // A negative count is followed by the block's size in bytes (Avro's blocks).
      if (count < 0) tap.skipLong();
      for (let i = Math.abs(count); i > 0; i -= 1) setOwn(map, tap.readString(), values._read(tap));
    }
    return map;
  }
}

/** Avro `decimal` (bytes or fixed: a big-endian two's-complement unscaled integer) as the number a JSON fact would hold. */
class DecimalAsNumber extends avro.types.LogicalType {
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
    this.scale = scale as number;
  }

  protected override _fromValue(value: Buffer): number {
    if (value.length === 0) return 0;
    let unscaled = BigInt.asIntN(value.length * 8, BigInt(`0x${value.toString('hex')}`));
    const negative = unscaled < 0n;
    if (negative) unscaled = -unscaled;
    const digits = unscaled.toString().padStart(this.scale + 1, '0');
    const text = this.scale === 0 ? digits : `${digits.slice(0, -this.scale)}.${digits.slice(-this.scale)}`;
    return Number(negative ? `-${text}` : text);
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
 * as its JSON twin would and a `__proto__` map key reaches the poisoning check.
 */
export const avroReadOptions = {
  logicalTypes: { decimal: DecimalAsNumber },
  typeHook: (schema: unknown, opts: unknown): avro.Type | undefined => {
    if (schema === 'long') return longAsNumber;
    if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return undefined;
    const { type } = schema as { type?: unknown };
    // Also a long of a logical type read as its long (timestamps in micro- or nanoseconds pass 2^53).
    if (type === 'long') return longAsNumber;
    if (type === 'map') return new OwnKeysMapType(schema as avro.Schema, opts);
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
  isValid(value: unknown): boolean;
  fromBuffer(buffer: Buffer): unknown;
}

export function isAvroType(schema: unknown): schema is AvroType {
  const type = schema as Partial<AvroType> | null;
  return typeof type?.typeName === 'string' && typeof type.fromBuffer === 'function' && typeof type.isValid === 'function';
}

/**
 * A decoded Avro value as plain JSON data. Union values come out as their branch's value (avsc wraps a union whose
 * branches it cannot tell apart, e.g. long and double, as `{"long": 7200}`); bytes and fixed become text with one
 * character per byte (Avro's own JSON encoding); longs past 2^53 lose precision as JSON numbers do (avroReadOptions);
 * NaN and infinities, which JSON cannot hold, become null.
 */
export function avroToJson(type: AvroType, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  switch (type.typeName) {
    case 'record':
    case 'error': {
      const out: Record<string, unknown> = {};
      const record = value as Record<string, unknown>;
      for (const field of type.fields ?? []) setOwn(out, field.name, avroToJson(field.type, record[field.name]));
      return out;
    }
    case 'map': {
      const out: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(value as Record<string, unknown>))
        setOwn(out, key, avroToJson(type.valuesType as AvroType, item));
      return out;
    }
    case 'array':
      return (value as unknown[]).map((item) => avroToJson(type.itemsType as AvroType, item));
    case 'union:wrapped': {
      const [branch] = Object.keys(value as object);
      const branchType = type.types?.find((candidate) => candidate.branchName === branch);
      return branchType === undefined || branch === undefined ? null : avroToJson(branchType, (value as Record<string, unknown>)[branch]);
    }
    case 'union:unwrapped': {
      const branchType = type.types?.find((candidate) => candidate.typeName !== 'null' && candidate.isValid(value));
      return branchType === undefined ? null : avroToJson(branchType, value);
    }
    case 'bytes':
    case 'fixed':
      return Buffer.isBuffer(value) ? value.toString('latin1') : null;
    case 'long':
    case 'abstract:long':
    case 'int':
    case 'float':
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

/** An own property even for `__proto__` (a valid Avro name), as JSON.parse makes it, never the object's prototype. */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}
