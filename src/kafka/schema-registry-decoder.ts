// Decodes Confluent wire-format values (Avro, JSON Schema, Protobuf) through a Confluent-compatible schema registry.
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import { nonFiniteNumberProblem } from '../contracts/json-numbers.ts';
import { AppError } from '../errors.ts';
import { type RegistryDecoder, toPlainJson, WIRE_HEADER_LENGTH, wireSchemaId } from './fact-codec.ts';
import { avroReadOptions, avroToJson, isAvroType } from './registry-avro.ts';
import { decodeProtobuf, isProtobufSchema } from './registry-protobuf.ts';

/** Confluent's code for "schema not found": the only answer that proves an id will never decode. */
const SCHEMA_NOT_FOUND = 40403;

/**
 * Why fetching a writer schema failed. Only a 404 carrying the registry's own "schema not found" code means the id can
 * never succeed; any other HTTP answer (a 404 from a proxy or a wrong base URL, a 5xx, connection errors, which the client
 * reports as status 400, a 200 that is no schema) is the registry being unavailable, retried. Anything else (a schema
 * the client cannot compile) is left uncoded, so the failure policy retries it a few times before dead-lettering it.
 * Details name the status only: an answer's body (a proxy's page, internal addresses) reaches `/health/ready`.
 */
export function classifyRegistryError(schemaId: number, error: unknown, registryCode?: number): Error {
  const status = (error as { status?: unknown } | null)?.status;
  if (status === 404 && registryCode === SCHEMA_NOT_FOUND) {
    return new AppError('VALIDATION_ERROR', `schema id ${schemaId} is not in the schema registry`, { cause: error });
  }
  if (status === 404) {
    return new AppError(
      'UNAVAILABLE',
      `schema registry answered 404 for schema id ${schemaId} without its "schema not found" code: check SCHEMA_REGISTRY_URL (for Apicurio it ends in /apis/ccompat/v7)`,
      { cause: error },
    );
  }
  if (typeof status === 'number') {
    return new AppError('UNAVAILABLE', `schema registry could not be read for schema id ${schemaId} (status ${status})`, { cause: error });
  }
  return new Error(`schema id ${schemaId} cannot be used to decode: ${(error as Error).message}`, { cause: error });
}

/** A RegistryDecoder over the registry client; writer schemas are cached by id, so only the first use of an id waits. */
export function createRegistryDecoder({
  registry,
  errorCodeOf = async () => undefined,
}: {
  readonly registry: Pick<SchemaRegistry, 'getSchema' | 'decode'>;
  /** The registry's own `error_code` for a schema id's answer (the client's error keeps only the status). */
  readonly errorCodeOf?: (schemaId: number) => Promise<number | undefined>;
}): RegistryDecoder {
  return {
    async decode(value: Buffer): Promise<unknown> {
      const schemaId = wireSchemaId(value);
      let schema: unknown;
      try {
        schema = await registry.getSchema(schemaId);
      } catch (error) {
        const status = (error as { status?: unknown } | null)?.status;
        throw classifyRegistryError(schemaId, error, status === 404 ? await errorCodeOf(schemaId) : undefined);
      }
      let decoded: unknown;
      try {
        if (isProtobufSchema(schema)) return decodeProtobuf(schema, value.subarray(WIRE_HEADER_LENGTH));
        decoded = await registry.decode(value);
        // Avro values are read along their schema: unions unwrapped, bytes as text, so they equal their JSON twin.
        if (isAvroType(schema)) return avroToJson(schema, decoded);
      } catch (error) {
        throw new AppError('VALIDATION_ERROR', `value does not decode with schema id ${schemaId}: ${(error as Error).message}`, {
          cause: error,
        });
      }
      // A JSON Schema value is JSON text: a number a double cannot hold (1e400) is refused as in a plain JSON value,
      // where copying it would record null.
      const hugeNumber = nonFiniteNumberProblem(decoded);
      if (hugeNumber !== undefined) throw new AppError('VALIDATION_ERROR', `value ${hugeNumber}`);
      return toPlainJson(decoded);
    },
  };
}

/** The registry client's middleware type (its HTTP library's), taken from the client so no second copy is imported. */
type RegistryMiddleware = NonNullable<ConstructorParameters<typeof SchemaRegistry>[0]['middlewares']>[number];

/** How long a registry request may go without an answer before it fails (as unavailable, so it is retried). */
export const REGISTRY_TIMEOUT_MS = 10_000;

/** The registry client, and how to read the registry's `error_code` for a schema id (the client's error drops the body). */
export interface ConnectedRegistry {
  readonly registry: SchemaRegistry;
  readonly errorCodeOf: (schemaId: number) => Promise<number | undefined>;
}

/**
 * The registry client for a base URL (for Apicurio, the ccompat/v7 API root). Every request has a time-out: a registry
 * that accepts connections but never answers would otherwise hold its partition's run, and every later use of the
 * schema id, for good. JSON Schemas compile leniently (unknown formats and keywords, any draft): the producer's
 * registry accepted them, and a stricter reader would dead-letter every value written with them.
 */
export function connectSchemaRegistry(url: string, timeoutMs = REGISTRY_TIMEOUT_MS): ConnectedRegistry {
  const timeout: RegistryMiddleware = () => ({
    prepareRequest: async (next) => (await next()).enhance({ timeout: timeoutMs }),
  });
  // A writer schema answer that holds no schema (a proxy's or a login page) fails like an HTTP error, so it is retried.
  const schemaAnswers: RegistryMiddleware = ({ resourceName, resourceMethod }) => ({
    response: async (next) => {
      const response = await next();
      const data = response.data() as { schema?: unknown } | undefined;
      if (resourceName === 'Schema' && resourceMethod === 'find' && typeof data?.schema !== 'string') {
        throw Object.assign(new Error('the schema registry answered without a schema'), { status: response.status() });
      }
      return response;
    },
  });
  const registry = new SchemaRegistry(
    { host: url, clientId: 'rules-evaluator', middlewares: [timeout, schemaAnswers] },
    { [SchemaType.JSON]: { strict: false, validateSchema: false, logger: false }, [SchemaType.AVRO]: avroReadOptions },
  );
  return { registry, errorCodeOf: (schemaId) => registryErrorCode(url, schemaId, timeoutMs) };
}

/** Asks for a schema id again, outside the client, for the `error_code` in the registry's answer; undefined when there is none. */
async function registryErrorCode(url: string, schemaId: number, timeoutMs: number): Promise<number | undefined> {
  const target = new URL(`${url.replace(/\/+$/, '')}/schemas/ids/${schemaId}`);
  const headers: Record<string, string> = { accept: 'application/vnd.schemaregistry.v1+json, application/json' };
  // Credentials in the URL (as the client accepts them) travel as basic authentication: fetch refuses them in the URL.
  if (target.username !== '' || target.password !== '') {
    const credentials = `${decodeURIComponent(target.username)}:${decodeURIComponent(target.password)}`;
    headers.authorization = `Basic ${Buffer.from(credentials).toString('base64')}`;
    target.username = '';
    target.password = '';
  }
  try {
    const response = await fetch(target, { headers, signal: AbortSignal.timeout(timeoutMs) });
    const body = (await response.json()) as { error_code?: unknown } | null;
    return typeof body?.error_code === 'number' ? body.error_code : undefined;
  } catch {
    return undefined;
  }
}
