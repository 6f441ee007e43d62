// Decodes Confluent wire-format values (Avro, JSON Schema, Protobuf) through a Confluent-compatible schema registry.
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import { nonFiniteNumberProblem } from '../contracts/json-numbers.ts';
import { AppError } from '../errors.ts';
import { type ReferencedSchema, type RegistryDecoder, toPlainJson, WIRE_HEADER_LENGTH, wireSchemaId } from './fact-codec.ts';
import { avroReadOptions, avroToJson, isAvroType } from './registry-avro.ts';
import { compileJsonSchema, decodeJsonSchemaValue, isCompiledJsonSchema } from './registry-json-schema.ts';
import { compileProtobuf, decodeProtobuf, isProtobufSchema } from './registry-protobuf.ts';

/** Confluent's code for "schema not found": the only answer that proves an id will never decode. */
const SCHEMA_NOT_FOUND = 40403;

/**
 * What asking the registry again, outside the client, tells of a failed request: the `error_code` of its answer, or why
 * none came (an error code such as ECONNREFUSED, a TLS failure, a timeout). The client reports both as an HTTP status.
 */
export interface RegistryProbe {
  readonly errorCode?: number;
  readonly unreachable?: string;
}

/**
 * Why fetching a writer schema failed. Only a 404 carrying the registry's own "schema not found" code means the id can
 * never succeed; any other HTTP answer (a 404 from a proxy or a wrong base URL, a 5xx, a 200 that is no schema) and a
 * registry never reached (which the client reports as status 400, so a 400 is probed again: `answer`) is the registry
 * being unavailable, retried. Anything else (a schema the client cannot compile) is left uncoded, so the failure policy
 * retries it a few times before dead-lettering it. Details name the status or the error code only: an answer's body
 * (a proxy's page, internal addresses) reaches `/health/ready`.
 */
export function classifyRegistryError(schemaId: number, error: unknown, answer: RegistryProbe = {}): Error {
  const status = (error as { status?: unknown } | null)?.status;
  if (status === 404 && answer.errorCode === SCHEMA_NOT_FOUND) {
    return new AppError('VALIDATION_ERROR', `schema id ${schemaId} is not in the schema registry`, { cause: error });
  }
  if (status === 404) {
    return new AppError(
      'UNAVAILABLE',
      `schema registry answered 404 for schema id ${schemaId} without its "schema not found" code: check SCHEMA_REGISTRY_URL (for Apicurio it ends in /apis/ccompat/v7)`,
      { cause: error },
    );
  }
  const own = (error as { unreachable?: unknown } | null)?.unreachable;
  const unreachable = typeof own === 'string' ? own : status === 400 ? answer.unreachable : undefined;
  if (unreachable !== undefined) {
    return new AppError('UNAVAILABLE', `schema registry could not be reached for schema id ${schemaId} (${unreachable})`, { cause: error });
  }
  if (typeof status === 'number') {
    return new AppError('UNAVAILABLE', `schema registry could not be read for schema id ${schemaId} (status ${status})`, { cause: error });
  }
  return new Error(`schema id ${schemaId} cannot be used to decode: ${(error as Error).message}`, { cause: error });
}

/**
 * A Protobuf or JSON Schema writer schema as the registry holds it: its text and every schema it references; undefined
 * for an Avro schema.
 */
export type SchemaSource = (
  schemaId: number,
) => Promise<{ schemaType: 'PROTOBUF' | 'JSON'; schema: string; references: ReferencedSchema[] } | undefined>;

/** A RegistryDecoder over the registry client; writer schemas are cached by id, so only the first use of an id waits. */
export function createRegistryDecoder({
  registry,
  probe = async () => ({}),
  schemaSource,
}: {
  readonly registry: Pick<SchemaRegistry, 'getSchema' | 'decode'>;
  /** Asks for a schema id again after the client failed with a 404 or 400: its error keeps only the status. */
  readonly probe?: (schemaId: number) => Promise<RegistryProbe>;
  /**
   * Protobuf and JSON schemas are compiled here from their text: the client's Protobuf compiler renames fields and misses
   * some files; its JSON Schema compiler knows draft-07 only and finds references only by `$id`.
   */
  readonly schemaSource?: SchemaSource;
}): RegistryDecoder {
  const ownSchemas = new Map<number, Promise<unknown>>();
  /** The schema compiled here, once per id (a failure is not kept: a registry away is retried); undefined for Avro. */
  const ownSchemaOf = (schemaId: number, source: SchemaSource): Promise<unknown> => {
    let compiled = ownSchemas.get(schemaId);
    if (compiled === undefined) {
      compiled = source(schemaId).then((files) => {
        if (files === undefined) return undefined;
        return files.schemaType === 'PROTOBUF'
          ? compileProtobuf(files.schema, files.references)
          : compileJsonSchema(files.schema, files.references);
      });
      compiled.catch(() => ownSchemas.delete(schemaId));
      ownSchemas.set(schemaId, compiled);
    }
    return compiled;
  };
  /** The writer schema: the client's for Avro, one compiled here for Protobuf and JSON Schema (or a schema the client cannot compile). */
  const schemaOf = async (schemaId: number): Promise<unknown> => {
    let schema: unknown;
    let clientError: unknown;
    try {
      schema = await registry.getSchema(schemaId);
    } catch (error) {
      const status = (error as { status?: unknown } | null)?.status;
      if (typeof status === 'number' || schemaSource === undefined) {
        throw classifyRegistryError(schemaId, error, status === 404 || status === 400 ? await probe(schemaId) : {});
      }
      clientError = error;
    }
    if (schemaSource === undefined || (clientError === undefined && isAvroType(schema))) return schema;
    let own: unknown;
    try {
      own = await ownSchemaOf(schemaId, schemaSource);
    } catch (error) {
      const status = (error as { status?: unknown } | null)?.status;
      throw classifyRegistryError(schemaId, error, status === 404 ? await probe(schemaId) : {});
    }
    if (own !== undefined) return own;
    if (clientError === undefined) return schema;
    throw classifyRegistryError(schemaId, clientError);
  };
  return {
    async decode(value: Buffer): Promise<unknown> {
      const schemaId = wireSchemaId(value);
      const schema = await schemaOf(schemaId);
      let decoded: unknown;
      try {
        if (isProtobufSchema(schema)) return decodeProtobuf(schema, value.subarray(WIRE_HEADER_LENGTH));
        decoded = isCompiledJsonSchema(schema)
          ? decodeJsonSchemaValue(schema, value.subarray(WIRE_HEADER_LENGTH))
          : await registry.decode(value);
        // Avro values are read along their schema: unions unwrapped, bytes as text, so they equal their JSON twin.
        if (isAvroType(schema)) return avroToJson(schema, decoded);
      } catch (error) {
        throw new AppError('VALIDATION_ERROR', `value does not decode with schema id ${schemaId}: ${decodeProblem(error)}`, {
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

/** Most schema violations named in a dead letter's reason; the rest are counted. */
const MAX_PROBLEMS = 5;

/** Why a value did not decode; for a JSON Schema value, where and how it breaks its schema (`/facts/amount must be number`). */
function decodeProblem(error: unknown): string {
  const paths = (error as { paths?: unknown } | null)?.paths;
  const message = (error as Error).message;
  if (!Array.isArray(paths) || paths.length === 0) return message;
  const problems = paths.slice(0, MAX_PROBLEMS).map((entry: { path?: unknown; message?: unknown }) => {
    const where = Array.isArray(entry.path) ? entry.path.join('') : '';
    return `${where === '' ? '/' : where} ${String(entry.message ?? 'is invalid')}`;
  });
  const more = paths.length > MAX_PROBLEMS ? ` and ${paths.length - MAX_PROBLEMS} more` : '';
  return `${message}: ${problems.join('; ')}${more}`;
}

/** The registry client's middleware type (its HTTP library's), taken from the client so no second copy is imported. */
type RegistryMiddleware = NonNullable<ConstructorParameters<typeof SchemaRegistry>[0]['middlewares']>[number];

/** How long a registry request may go without an answer before it fails (as unavailable, so it is retried). */
export const REGISTRY_TIMEOUT_MS = 10_000;

/**
 * The registry client, how to read the registry's `error_code` for a schema id (the client's error drops the body), and
 * a Protobuf or JSON schema's text with the schemas it references.
 */
export interface ConnectedRegistry {
  readonly registry: SchemaRegistry;
  readonly probe: (schemaId: number) => Promise<RegistryProbe>;
  readonly schemaSource: SchemaSource;
}

/**
 * The registry client for a base URL (for Apicurio, the ccompat/v7 API root). Every request has a time-out: a registry
 * that accepts connections but never answers would otherwise hold its partition's run, and every later use of the
 * schema id, for good. The decoder compiles Protobuf and JSON schemas itself (schemaSource); the client's own JSON Schema
 * compile is lenient (unknown formats and keywords ignored), so that it fails as seldom as possible before that.
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
    {
      // detailedErrorPaths: a dead letter's reason names where the value breaks its schema.
      [SchemaType.JSON]: { strict: false, validateSchema: false, logger: false, detailedErrorPaths: true },
      [SchemaType.AVRO]: avroReadOptions,
    },
  );
  return {
    registry,
    probe: (schemaId) => probeRegistry(url, schemaId, timeoutMs),
    schemaSource: (schemaId) => schemaFiles(url, schemaId, timeoutMs),
  };
}

/**
 * GETs a registry path outside the client, which keeps neither a schema's text nor an error's body. Fails like the
 * client does: an HTTP error carries its `status` (and the answer's `body`), a connection failure status 400.
 */
async function registryGet(url: string, path: string, timeoutMs: number): Promise<unknown> {
  const target = new URL(`${url.replace(/\/+$/, '')}${path}`);
  const headers: Record<string, string> = { accept: 'application/vnd.schemaregistry.v1+json, application/json' };
  // Credentials in the URL (as the client accepts them) travel as basic authentication: fetch refuses them in the URL.
  if (target.username !== '' || target.password !== '') {
    const credentials = `${decodeURIComponent(target.username)}:${decodeURIComponent(target.password)}`;
    headers.authorization = `Basic ${Buffer.from(credentials).toString('base64')}`;
    target.username = '';
    target.password = '';
  }
  let response: Response;
  let body: unknown;
  try {
    response = await fetch(target, { headers, signal: AbortSignal.timeout(timeoutMs) });
    body = await response.json().catch(() => undefined);
  } catch (error) {
    // As the client reports it (status 400), with the cause classifyRegistryError names: a Node or TLS error code.
    throw Object.assign(new Error('the schema registry could not be reached', { cause: error }), {
      status: 400,
      unreachable: whyUnanswered(error, timeoutMs),
    });
  }
  if (!response.ok) throw Object.assign(new Error(`the schema registry answered ${response.status}`), { status: response.status, body });
  return body;
}

/** Why fetch got no answer: the cause's error code (ECONNREFUSED, a TLS code), a timeout, or the cause's own words. */
function whyUnanswered(error: unknown, timeoutMs: number): string {
  if ((error as Error | null)?.name === 'TimeoutError') return `Timeout (${timeoutMs}ms)`;
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  if (typeof cause?.code === 'string') return cause.code;
  return typeof cause?.message === 'string' ? cause.message : 'no answer';
}

/** Asks for a schema id again, outside the client: the `error_code` of the registry's answer, or why none came. */
async function probeRegistry(url: string, schemaId: number, timeoutMs: number): Promise<RegistryProbe> {
  try {
    await registryGet(url, `/schemas/ids/${schemaId}`, timeoutMs);
    return {};
  } catch (error) {
    const { body, unreachable } = error as { body?: { error_code?: unknown }; unreachable?: string };
    if (unreachable !== undefined) return { unreachable };
    return typeof body?.error_code === 'number' ? { errorCode: body.error_code } : {};
  }
}

/** A registry answer naming a schema: its text, type and references (other subjects' versions). */
interface SchemaAnswer {
  readonly schema?: unknown;
  readonly schemaType?: unknown;
  readonly references?: readonly { readonly name?: unknown; readonly subject?: unknown; readonly version?: unknown }[];
}

/** A Protobuf or JSON schema's text and every schema it references, each once; undefined for an Avro schema. */
async function schemaFiles(url: string, schemaId: number, timeoutMs: number): ReturnType<SchemaSource> {
  const answer = (await registryGet(url, `/schemas/ids/${schemaId}`, timeoutMs)) as SchemaAnswer | undefined;
  // An answer that holds no schema (a proxy's or a login page) is the registry away, retried; it says nothing of the type.
  if (typeof answer?.schema !== 'string') throw Object.assign(new Error('the schema registry answered without a schema'), { status: 200 });
  const schemaType = answer.schemaType;
  if (schemaType !== 'PROTOBUF' && schemaType !== 'JSON') return undefined;
  const references: ReferencedSchema[] = [];
  const seen = new Set<string>();
  const pending = [...(answer.references ?? [])];
  while (pending.length > 0) {
    const { name, subject, version } = pending.shift()!;
    const key = `${String(subject)}/${String(version)}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const path = `/subjects/${encodeURIComponent(String(subject))}/versions/${encodeURIComponent(String(version))}`;
    const referenced = (await registryGet(url, path, timeoutMs)) as SchemaAnswer | undefined;
    if (typeof referenced?.schema !== 'string') {
      throw Object.assign(new Error(`the schema registry answered without the text of referenced schema ${key}`), { status: 200 });
    }
    references.push({ name: String(name), schema: referenced.schema });
    pending.push(...(referenced.references ?? []));
  }
  return { schemaType, schema: answer.schema, references };
}
