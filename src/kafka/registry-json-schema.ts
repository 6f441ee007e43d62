// JSON Schema values checked against their writer schema, compiled by the draft it declares, with the schemas it references.
import { Ajv, type Options, type ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import draft04 from 'ajv-draft-04';
import type { ReferencedSchema } from './fact-codec.ts';

// A CommonJS module whose exports are the class, which also carries itself as `default` (the name its types know).
const AjvDraft04 = draft04.default;

/** A writer schema compiled here (the registry client's compiler knows one draft and finds references only by `$id`). */
export interface CompiledJsonSchema {
  readonly kind: 'json-schema';
  readonly validate: ValidateFunction;
}

/**
 * Lenient, as the registry client was: the producer's registry accepted the schema, so unknown formats and keywords are
 * ignored rather than refused, and the schema itself is not validated against its meta-schema.
 */
const OPTIONS: Options = { strict: false, validateSchema: false, logger: false };

/** The validator of the draft a schema declares in `$schema`: draft-04, 2019-09, 2020-12; draft-06 and -07 otherwise. */
function validatorFor(declared: unknown): Pick<Ajv, 'addSchema' | 'compile'> {
  const uri = typeof declared === 'string' ? declared : '';
  if (uri.includes('draft-04')) return new AjvDraft04(OPTIONS);
  if (uri.includes('2019-09')) return new Ajv2019(OPTIONS);
  if (uri.includes('2020-12')) return new Ajv2020(OPTIONS);
  return new Ajv(OPTIONS);
}

/**
 * Compiles a JSON Schema with its references, each found by the name it is referenced with (also resolved against the
 * root's `$id`, as Confluent's and Apicurio's serializers resolve it) and by its own `$id`. References are read by the
 * draft of the schema that uses them. Throws when the schema cannot be compiled.
 */
export function compileJsonSchema(schema: string, references: readonly ReferencedSchema[]): CompiledJsonSchema {
  const root: unknown = JSON.parse(schema);
  const { $schema, $id } = (root ?? {}) as { $schema?: unknown; $id?: unknown };
  const ajv = validatorFor($schema);
  for (const reference of references) {
    const parsed: unknown = JSON.parse(reference.schema);
    // The same object under each name: its own $id is registered once.
    for (const name of new Set([reference.name, resolvedAgainst(reference.name, $id)])) ajv.addSchema(parsed as object, name);
  }
  return { kind: 'json-schema', validate: ajv.compile(root as object) };
}

/** `name` as a `$ref` in a schema whose `$id` is `base` reaches it: resolved against that URI, or as it is without one. */
function resolvedAgainst(name: string, base: unknown): string {
  if (typeof base !== 'string') return name;
  try {
    return new URL(name, base).href;
  } catch {
    return name;
  }
}

export function isCompiledJsonSchema(schema: unknown): schema is CompiledJsonSchema {
  return (schema as Partial<CompiledJsonSchema> | null)?.kind === 'json-schema';
}

/**
 * The JSON value of a payload (after the wire header), once it validates. Throws a SyntaxError for text that is no JSON,
 * and an `invalid payload` error whose `paths` say where and how the value breaks its schema.
 */
export function decodeJsonSchemaValue(schema: CompiledJsonSchema, payload: Buffer): unknown {
  const value: unknown = JSON.parse(payload.toString('utf8'));
  if (!schema.validate(value)) {
    const paths = (schema.validate.errors ?? []).map((error) => ({ path: [error.instancePath], message: error.message }));
    throw Object.assign(new Error('invalid payload'), { paths });
  }
  return value;
}
