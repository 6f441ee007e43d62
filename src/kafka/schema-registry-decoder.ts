// Decodes Confluent wire-format values (Avro, JSON Schema, Protobuf) through a Confluent-compatible schema registry.
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { AppError } from '../errors.ts';
import { type RegistryDecoder, toPlainJson, wireSchemaId } from './fact-codec.ts';

/**
 * Why fetching a writer schema failed, as a registered error: an id the registry does not know (404) can never
 * succeed; any other HTTP failure (the client reports connection errors as status 400) is the registry being unavailable.
 */
export function classifyRegistryError(schemaId: number, error: unknown): AppError {
  const status = (error as { status?: unknown } | null)?.status;
  if (status === 404) return new AppError('VALIDATION_ERROR', `schema id ${schemaId} is not in the schema registry`, { cause: error });
  if (typeof status === 'number') {
    return new AppError('UNAVAILABLE', `schema registry could not be read for schema id ${schemaId}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  return new AppError('VALIDATION_ERROR', `schema id ${schemaId} cannot be used to decode: ${(error as Error).message}`, { cause: error });
}

/** A RegistryDecoder over the registry client; writer schemas are cached by id, so only the first use of an id waits. */
export function createRegistryDecoder(registry: Pick<SchemaRegistry, 'getSchema' | 'decode'>): RegistryDecoder {
  return {
    async decode(value: Buffer): Promise<unknown> {
      const schemaId = wireSchemaId(value);
      try {
        await registry.getSchema(schemaId);
      } catch (error) {
        throw classifyRegistryError(schemaId, error);
      }
      try {
        return toPlainJson(await registry.decode(value));
      } catch (error) {
        throw new AppError('VALIDATION_ERROR', `value does not decode with schema id ${schemaId}: ${(error as Error).message}`, {
          cause: error,
        });
      }
    },
  };
}

/** The registry client's middleware type (its HTTP library's), taken from the client so no second copy is imported. */
type RegistryMiddleware = NonNullable<ConstructorParameters<typeof SchemaRegistry>[0]['middlewares']>[number];

/** How long a registry request may go without an answer before it fails (as unavailable, so it is retried). */
export const REGISTRY_TIMEOUT_MS = 10_000;

/**
 * The registry client for a base URL (for Apicurio, the ccompat/v7 API root). Every request has a time-out: a registry
 * that accepts connections but never answers would otherwise hold its partition's run, and every later use of the
 * schema id, for good.
 */
export function connectSchemaRegistry(url: string, timeoutMs = REGISTRY_TIMEOUT_MS): SchemaRegistry {
  const timeout: RegistryMiddleware = () => ({
    prepareRequest: async (next) => (await next()).enhance({ timeout: timeoutMs }),
  });
  return new SchemaRegistry({ host: url, clientId: 'rules-evaluator', middlewares: [timeout] });
}
