// Avro values read along their writer schema into the JSON a producer would have sent: rules see the same facts either way.
import { toPlainJson } from './fact-codec.ts';

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
 * character per byte (Avro's own JSON encoding); longs past 2^53 lose precision as JSON numbers do; NaN and infinities,
 * which JSON cannot hold, become null.
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
    case 'int':
    case 'float':
    case 'double': {
      const number = typeof value === 'bigint' ? Number(value) : (value as number);
      return Number.isFinite(number) ? number : null;
    }
    default:
      // Logical types (when a client registers them: Dates, decimals) as JSON writes them; boolean, string, enum are JSON.
      return type.typeName.startsWith('logical:') ? toPlainJson(value) : value;
  }
}

/** An own property even for `__proto__` (a valid Avro name), as JSON.parse makes it, never the object's prototype. */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}
