// Protobuf values in the Confluent wire format, read as the JSON a producer would have sent: field names as declared,
// the message the indexes name, well-known types as the proto3 JSON mapping writes them.
import { createRequire } from 'node:module';
import protobuf from 'protobufjs';
import { type ReferencedSchema, toPlainJson } from './fact-codec.ts';
import { float32Number } from './registry-avro.ts';

const require = createRequire(import.meta.url);

/** protobufjs's shipped files beside its common ones (descriptor.proto is what custom options extend), with what they import. */
const SHIPPED: Record<string, readonly string[]> = {
  api: ['api', 'type', 'source_context'],
  descriptor: ['descriptor'],
  source_context: ['source_context'],
  type: ['type', 'source_context'],
};

/**
 * Google's files a schema may import without naming them as references (Confluent's serializers register none of them),
 * with the files they import; undefined for any other file.
 */
function wellKnownFiles(name: string): protobuf.INamespace[] | undefined {
  const common = protobuf.common.get(name);
  if (common !== null && common !== undefined) return [common];
  const shipped = SHIPPED[/^google\/protobuf\/(\w+)\.proto$/.exec(name)?.[1] ?? ''];
  return shipped?.map((file) => require(`protobufjs/google/protobuf/${file}.json`) as protobuf.INamespace);
}

/** A field name as a `.proto` file declares it: protobufjs wrote its bundled files' names in camel case (`fileName`). */
const declared = (name: string): string => name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);

/** A copy of a bundled file's definitions with field and oneof names as declared. */
function withDeclaredNames(definition: unknown): unknown {
  if (Array.isArray(definition)) return definition.map(withDeclaredNames);
  if (typeof definition !== 'object' || definition === null) return definition;
  const copy: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(definition)) {
    if (key === 'fields' && typeof value === 'object' && value !== null) {
      copy.fields = Object.fromEntries(Object.entries(value).map(([field, spec]) => [declared(field), withDeclaredNames(spec)]));
    } else if (key === 'oneof' && Array.isArray(value)) {
      copy.oneof = value.map((field) => declared(String(field)));
    } else {
      copy[key] = withDeclaredNames(value);
    }
  }
  return copy;
}

/** Adds the definitions a namespace lacks: Google's bundled files repeat some types (Any, SourceContext, Option). */
function addMissing(namespace: protobuf.Namespace, nested: Record<string, unknown>): void {
  for (const [name, definition] of Object.entries(nested)) {
    const existing = namespace.get(name);
    const inner = (definition as { nested?: Record<string, unknown> }).nested;
    if (existing === null) namespace.addJSON({ [name]: definition as protobuf.AnyNestedObject });
    else if (existing instanceof protobuf.Namespace && !(existing instanceof protobuf.Type) && inner !== undefined) {
      addMissing(existing, inner);
    }
  }
}

/** The parts of a protobufjs Type this module uses. */
interface ProtoType {
  readonly fullName: string;
  readonly fieldsArray: readonly ProtoField[];
  readonly nestedArray: readonly unknown[];
  decode(bytes: Uint8Array): object;
  toObject(message: object, options: object): Record<string, unknown>;
}

interface ProtoField {
  readonly name: string;
  /** The scalar type's name (`float`, `int64`), or a message's or enum's; for a map, its values'. */
  readonly type: string;
  readonly map?: boolean;
  readonly keyType?: string;
  readonly repeated: boolean;
  readonly resolvedType: unknown;
  /**
   * Falsy for proto3 fields that are neither `optional` nor in a oneof (protobufjs gives the oneof itself when truthy);
   * message fields have presence whatever it says.
   */
  readonly hasPresence: unknown;
}

/** A Protobuf schema compiled for reading: the file's top-level messages in declaration order, which message indexes count. */
export interface ProtobufSchema {
  readonly messages: readonly ProtoType[];
}

const isMessageType = (reflection: unknown): reflection is ProtoType =>
  Array.isArray((reflection as Partial<ProtoType> | null | undefined)?.fieldsArray);

/**
 * Compiles a schema's file with the files it references (the registry's references, then Google's well-known types for
 * imports no reference provides). Field names stay as declared (`session_id`, not `sessionId`): the JSON twin of a fact
 * spells them so. Throws when a type cannot be resolved.
 */
export function compileProtobuf(source: string, references: readonly ReferencedSchema[]): ProtobufSchema {
  const root = new protobuf.Root();
  const parsed = protobuf.parse(source, root, { keepCase: true });
  const scope = parsed.package === undefined ? root : root.lookup(parsed.package);
  // Read before the references join: a referenced file of the same package adds its messages to the same namespace.
  const messages: ProtoType[] = [];
  for (const nested of (scope as protobuf.Namespace | null)?.nestedArray ?? []) if (isMessageType(nested)) messages.push(nested);
  const imports = new Set([...(parsed.imports ?? []), ...(parsed.weakImports ?? [])]);
  for (const reference of references) {
    const file = protobuf.parse(reference.schema, root, { keepCase: true });
    for (const name of [...(file.imports ?? []), ...(file.weakImports ?? [])]) imports.add(name);
  }
  const provided = new Set(references.map((reference) => reference.name));
  for (const name of imports) {
    if (provided.has(name)) continue;
    const files = wellKnownFiles(name);
    if (files === undefined) {
      throw new Error(`it imports ${name}, which is neither one of its references nor a file the service provides (google/protobuf/*)`);
    }
    for (const file of files) addMissing(root, withDeclaredNames(file.nested ?? {}) as Record<string, unknown>);
  }
  root.resolveAll();
  return { messages };
}

export function isProtobufSchema(schema: unknown): schema is ProtobufSchema {
  return Array.isArray((schema as Partial<ProtobufSchema> | null)?.messages);
}

/**
 * Decodes the payload after the 5-byte header: the message indexes (a zigzag varint count, then that many indexes; a
 * single 0 means the first message), then the message, as plain JSON data: 64-bit integers as numbers (as map keys,
 * their decimal text), floats as the shortest decimal of their 32 bits, enums by name, bytes in base64, fields left at
 * their default omitted, well-known types as the proto3 JSON mapping writes them.
 */
export function decodeProtobuf(schema: ProtobufSchema, payload: Buffer): unknown {
  const reader = { offset: 0 };
  const count = zigzag(readVarint(payload, reader));
  const indexes = count === 0 ? [0] : Array.from({ length: count }, () => zigzag(readVarint(payload, reader)));
  let candidates = schema.messages;
  let type: ProtoType | undefined;
  for (const index of indexes) {
    type = candidates[index];
    if (type === undefined) throw new Error(`the schema has no message at index path [${indexes.join(', ')}]`);
    candidates = type.nestedArray.filter(isMessageType);
  }
  const message = (type as ProtoType).decode(payload.subarray(reader.offset));
  const object = (type as ProtoType).toObject(message, { longs: Number, enums: String, bytes: String });
  return toPlainJson(messageToJson(type as ProtoType, object));
}

/** A message's fields, each as the proto3 JSON mapping writes it (well-known types in their JSON form). */
function messageToJson(type: ProtoType, object: Record<string, unknown>): unknown {
  const wellKnown = WELL_KNOWN[type.fullName];
  if (wellKnown !== undefined) return wellKnown(object);
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(object)) {
    const field = type.fieldsArray.find((candidate) => candidate.name === name);
    // Set to its default or left unset, such a field is the same message: encoders differ in writing it.
    if (field !== undefined && isImplicitDefault(field, value)) continue;
    if (field === undefined || value === null || typeof value !== 'object') {
      out[name] = field === undefined ? value : valueToJson(field, value);
    } else if (field.map === true) {
      out[name] = Object.fromEntries(Object.entries(value).map(([key, item]) => [mapKey(field, key), valueToJson(field, item)]));
    } else if (field.repeated && Array.isArray(value)) {
      out[name] = value.map((item: unknown) => valueToJson(field, item));
    } else {
      out[name] = valueToJson(field, value);
    }
  }
  return out;
}

/**
 * Whether a field without presence holds its default (0, false, "", the enum's zero, empty bytes, list or map): the proto3
 * JSON mapping leaves it out. -0 is not the default, as its bits are written.
 */
function isImplicitDefault(field: ProtoField, value: unknown): boolean {
  if (field.hasPresence || (isMessageType(field.resolvedType) && !field.repeated && field.map !== true)) return false;
  if (field.map === true) return value !== null && typeof value === 'object' && Object.keys(value).length === 0;
  if (field.repeated) return Array.isArray(value) && value.length === 0;
  if (typeof value === 'string') return value === '' || (isEnum(field.resolvedType) && field.resolvedType.values[value] === 0);
  return Object.is(value, 0) || value === false;
}

const isEnum = (reflection: unknown): reflection is { readonly values: Record<string, number> } =>
  !isMessageType(reflection) && typeof (reflection as { values?: unknown } | null)?.values === 'object';

/** One value of a field (an item of a repeated one, a map's value): a message as its JSON, a float at its own precision. */
function valueToJson(field: ProtoField, value: unknown): unknown {
  const fieldType = field.resolvedType;
  if (isMessageType(fieldType) && value !== null && typeof value === 'object') {
    return messageToJson(fieldType, value as Record<string, unknown>);
  }
  return field.type === 'float' && typeof value === 'number' ? float32Number(value) : value;
}

const LONG_KEY_TYPES = new Set(['int64', 'uint64', 'sint64', 'fixed64', 'sfixed64']);

/** A map key as proto3 JSON writes it; protobufjs keeps a 64-bit key as its 8-character hash, which is decoded here. */
function mapKey(field: ProtoField, key: string): string {
  if (!LONG_KEY_TYPES.has(field.keyType ?? '')) return key;
  const { lo, hi } = protobuf.util.LongBits.fromHash(key);
  const bits = (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0);
  const unsigned = field.keyType === 'uint64' || field.keyType === 'fixed64';
  return String(unsigned ? bits : BigInt.asIntN(64, bits));
}

/** Timestamp's range in the proto3 JSON mapping: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z. */
const MIN_TIMESTAMP_SECONDS = -62_135_596_800;
const MAX_TIMESTAMP_SECONDS = 253_402_300_799;
/** Duration's range: about ±10,000 years. */
const MAX_DURATION_SECONDS = 315_576_000_000;
const MAX_NANOS = 999_999_999;

/** `.000000001` style fractions of a second: 0, 3, 6 or 9 digits, as the proto3 JSON mapping writes them. */
function fraction(nanos: number): string {
  if (nanos === 0) return '';
  const digits = String(nanos).padStart(9, '0');
  if (nanos % 1_000_000 === 0) return `.${digits.slice(0, 3)}`;
  return nanos % 1_000 === 0 ? `.${digits.slice(0, 6)}` : `.${digits}`;
}

const numberOf = (value: unknown): number => (typeof value === 'number' ? value : 0);

/** A Value's field by its proto name or protobufjs's camel-cased one (a reference may supply struct.proto itself). */
function member(kind: Record<string, unknown>, name: string): unknown {
  const snake = name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
  return Object.hasOwn(kind, name) ? kind[name] : Object.hasOwn(kind, snake) ? kind[snake] : undefined;
}
const wrapped =
  (empty: unknown) =>
  (object: Record<string, unknown>): unknown =>
    object.value ?? empty;

function structValue(value: unknown): unknown {
  const kind = (value ?? {}) as Record<string, unknown>;
  const nested = member(kind, 'structValue');
  if (nested !== undefined) return struct(nested as Record<string, unknown>);
  const list = member(kind, 'listValue');
  if (list !== undefined) return ((list as { values?: unknown[] }).values ?? []).map(structValue);
  for (const name of ['numberValue', 'stringValue', 'boolValue']) {
    const scalar = member(kind, name);
    if (scalar !== undefined) return scalar;
  }
  return null;
}

function struct(object: Record<string, unknown>): Record<string, unknown> {
  const fields = (object.fields ?? {}) as Record<string, unknown>;
  return Object.fromEntries(Object.entries(fields).map(([key, value]) => [key, structValue(value)]));
}

/** Google's well-known types as the proto3 JSON mapping writes them; Any stays as decoded (its type is not at hand). */
const WELL_KNOWN: Record<string, (object: Record<string, unknown>) => unknown> = {
  '.google.protobuf.Timestamp': (object) => {
    const seconds = numberOf(object.seconds);
    const nanos = numberOf(object.nanos);
    if (seconds < MIN_TIMESTAMP_SECONDS || seconds > MAX_TIMESTAMP_SECONDS || nanos < 0 || nanos > MAX_NANOS) {
      throw new Error(`a Timestamp (${seconds} s, ${nanos} ns) is outside 0001-01-01 to 9999-12-31 or its nanos outside 0 to 999999999`);
    }
    const iso = new Date(seconds * 1_000).toISOString();
    return `${iso.slice(0, 19)}${fraction(nanos)}Z`;
  },
  '.google.protobuf.Duration': (object) => {
    const seconds = numberOf(object.seconds);
    const nanos = numberOf(object.nanos);
    if (Math.abs(seconds) > MAX_DURATION_SECONDS || Math.abs(nanos) > MAX_NANOS || seconds * nanos < 0) {
      throw new Error(`a Duration (${seconds} s, ${nanos} ns) is out of range or its seconds and nanos differ in sign`);
    }
    const sign = seconds < 0 || nanos < 0 ? '-' : '';
    return `${sign}${Math.abs(seconds)}${fraction(Math.abs(nanos))}s`;
  },
  '.google.protobuf.Struct': struct,
  '.google.protobuf.Value': structValue,
  '.google.protobuf.ListValue': (object) => ((object.values ?? []) as unknown[]).map(structValue),
  '.google.protobuf.DoubleValue': wrapped(0),
  '.google.protobuf.FloatValue': (object) => float32Number(numberOf(object.value)),
  '.google.protobuf.Int64Value': wrapped(0),
  '.google.protobuf.UInt64Value': wrapped(0),
  '.google.protobuf.Int32Value': wrapped(0),
  '.google.protobuf.UInt32Value': wrapped(0),
  '.google.protobuf.BoolValue': wrapped(false),
  '.google.protobuf.StringValue': wrapped(''),
  '.google.protobuf.BytesValue': wrapped(''),
};

function readVarint(bytes: Buffer, reader: { offset: number }): number {
  let value = 0;
  for (let shift = 0; shift < 35; shift += 7) {
    const byte = bytes[reader.offset];
    if (byte === undefined) throw new Error('the message indexes are truncated');
    reader.offset += 1;
    value += (byte & 0x7f) * 2 ** shift;
    if (byte < 0x80) return value;
  }
  throw new Error('a message index is longer than 5 bytes');
}

function zigzag(value: number): number {
  const decoded = value % 2 === 0 ? value / 2 : -(value + 1) / 2;
  if (decoded < 0) throw new Error('a message index is negative');
  return decoded;
}
