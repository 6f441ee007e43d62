// Protobuf values in the Confluent wire format: the message indexes say which message of the schema's file was written.
import { toPlainJson } from './fact-codec.ts';

/** The parts of a protobufjs Type this module uses. */
interface ProtoType {
  readonly fieldsArray: readonly unknown[];
  readonly nestedArray: readonly unknown[];
  readonly parent: { readonly nestedArray: readonly unknown[] } | null;
  decode(bytes: Uint8Array): object;
  toObject(message: object, options: object): object;
}

/** The registry client's Protobuf schema: `message` is the file's first message type. */
export interface ProtobufSchema {
  readonly message: ProtoType;
}

const isMessageType = (reflection: unknown): reflection is ProtoType =>
  Array.isArray((reflection as Partial<ProtoType> | null | undefined)?.fieldsArray);

export function isProtobufSchema(schema: unknown): schema is ProtobufSchema {
  const message = (schema as Partial<ProtobufSchema> | null)?.message;
  return isMessageType(message) && typeof message.decode === 'function' && typeof message.toObject === 'function';
}

/**
 * Decodes the payload after the 5-byte header: the message indexes (a zigzag varint count, then that many indexes; a
 * single 0 means the first message), then the message, as plain JSON data: 64-bit integers as numbers, enums by name,
 * bytes in base64, fields left at their default omitted (the proto3 JSON mapping).
 */
export function decodeProtobuf(schema: ProtobufSchema, payload: Buffer): unknown {
  const reader = { offset: 0 };
  const count = zigzag(readVarint(payload, reader));
  const indexes = count === 0 ? [0] : Array.from({ length: count }, () => zigzag(readVarint(payload, reader)));
  let candidates = (schema.message.parent?.nestedArray ?? [schema.message]).filter(isMessageType);
  let type: ProtoType | undefined;
  for (const index of indexes) {
    type = candidates[index];
    if (type === undefined) throw new Error(`the schema has no message at index path [${indexes.join(', ')}]`);
    candidates = type.nestedArray.filter(isMessageType);
  }
  const message = (type as ProtoType).decode(payload.subarray(reader.offset));
  return toPlainJson((type as ProtoType).toObject(message, { longs: Number, enums: String, bytes: String }));
}

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
