// Turns the bytes of a facts-topic message into a FactMessage, or says precisely why it never can.

import { z } from 'zod';
import { hugeNumberProblem } from '../contracts/json-numbers.ts';
import { type FactMessage, factMessageSchema } from '../contracts/kafka-messages.ts';
import { mayHoldPoisoningKey, poisoningKeyPath } from '../contracts/poisoning-keys.ts';
import { AppError } from '../errors.ts';
import { fastFactMessage } from './fact-fast-check.ts';

/** Confluent wire format: magic byte 0, a 4-byte big-endian schema id, then the encoded payload. */
export const WIRE_MAGIC_BYTE = 0;
export const WIRE_HEADER_LENGTH = 5;

export type ValueFormat = 'json' | 'registry';

/** Registry-framed values start with the magic byte; anything else is read as JSON text. */
export function valueFormat(value: Buffer): ValueFormat {
  return value.length > 0 && value[0] === WIRE_MAGIC_BYTE ? 'registry' : 'json';
}

/** The schema id of a registry-framed value; VALIDATION_ERROR when the frame is truncated. */
export function wireSchemaId(value: Buffer): number {
  if (value.length < WIRE_HEADER_LENGTH) {
    throw new AppError('VALIDATION_ERROR', `value starts with the schema registry magic byte but has only ${value.length} bytes`);
  }
  return value.readInt32BE(1);
}

/**
 * Parses a JSON value; VALIDATION_ERROR with the parser's reason when the bytes are not JSON, and (as over HTTP) when
 * an object has an own `__proto__` key or a `constructor` object carrying `prototype`, or a number a double cannot hold.
 */
export function parseJsonValue(value: Buffer | null): unknown {
  return parseJsonText(jsonText(value));
}

function jsonText(value: Buffer | null): string {
  if (value === null || value.length === 0) throw new AppError('VALIDATION_ERROR', 'message has no value');
  return value.toString('utf8');
}

function parseJsonText(text: string): unknown {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new AppError('VALIDATION_ERROR', `value is not valid JSON: ${(error as Error).message}`, { cause: error });
  }
  if (mayHoldPoisoningKey(text)) refusePoisoning(parsed);
  const hugeNumber = hugeNumberProblem(text, parsed);
  if (hugeNumber !== undefined) throw new AppError('VALIDATION_ERROR', `value ${hugeNumber}`);
  return parsed;
}

function refusePoisoning(parsed: unknown): void {
  const path = poisoningKeyPath(parsed);
  if (path !== undefined) throw new AppError('VALIDATION_ERROR', `value contains the forbidden key at ${path}`);
}

/** Copies a decoded value into plain JSON data: Avro decoders return class instances, bigints and Buffers. */
export function toPlainJson(value: unknown): unknown {
  const text = JSON.stringify(value, (_key, item: unknown) => (typeof item === 'bigint' ? Number(item) : item));
  return text === undefined ? undefined : JSON.parse(text);
}

/** Checks a decoded value against the fact message schema; VALIDATION_ERROR naming every problem and its path. */
export function parseFactMessage(decoded: unknown): FactMessage {
  const fast = fastFactMessage(decoded);
  if (fast !== undefined) return fast;
  const parsed = factMessageSchema.safeParse(decoded);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map(
    (issue) => `${issue.path.length > 0 ? z.core.toDotPath(issue.path) : 'value'}: ${issue.message}`,
  );
  throw new AppError('VALIDATION_ERROR', `fact message does not match the schema: ${problems.join('; ')}`, { cause: parsed.error });
}

/** A schema another one references (a Protobuf file, a JSON Schema), by the name the referencing schema uses, with its text. */
export interface ReferencedSchema {
  readonly name: string;
  readonly schema: string;
}

/** Decodes a registry-framed value to a plain object; implemented over the schema registry client. */
export interface RegistryDecoder {
  decode(value: Buffer): Promise<unknown>;
}

/** A decoded fact message, with the JSON text it was read from (undefined when it came through the registry). */
export interface DecodedFact {
  fact: FactMessage;
  json: string | undefined;
}

/**
 * Decodes one message value: JSON synchronously, registry-framed values through the registry.
 * Throws AppError VALIDATION_ERROR for values that can never be decoded, UNAVAILABLE when the registry cannot be reached.
 */
export function decodeFactValue(value: Buffer | null, registry: RegistryDecoder | undefined): DecodedFact | Promise<DecodedFact> {
  if (value === null || valueFormat(value) === 'json') {
    const text = jsonText(value);
    return { fact: parseFactMessage(parseJsonText(text)), json: text };
  }
  if (registry === undefined) {
    throw new AppError('VALIDATION_ERROR', 'value is in the schema registry wire format but SCHEMA_REGISTRY_URL is not configured');
  }
  return registry.decode(value).then((decoded) => {
    // A JSON Schema payload is parsed JSON too: the same keys are refused as in a plain JSON value.
    refusePoisoning(decoded);
    return { fact: parseFactMessage(decoded), json: undefined };
  });
}
