// The OpenAPI 3.1 document, generated from the routes' zod schemas, served at /openapi.json and browsable at /docs.
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { conditionNodeSchema } from '../contracts/condition-dsl.ts';
import { components, conditionDslField, refinementKeywords } from './schemas/common.ts';

type JsonSchema = Record<string, unknown>;

const COMPONENT_PREFIX = '#/components/schemas/';
const INPUT_PARTS = ['body', 'querystring', 'params', 'headers'] as const;

/** The DSL as its own component; its recursion refers to itself by name. */
export function conditionNodeComponent(): JsonSchema {
  const registry = z.registry<{ id: string }>();
  registry.add(conditionNodeSchema, { id: 'ConditionNode' });
  const { schemas } = z.toJSONSchema(registry, { uri: (id) => `${COMPONENT_PREFIX}${id}`, io: 'input' });
  const { $id: _id, $schema: _schema, ...node } = schemas.ConditionNode as JsonSchema;
  // The shape alone admits trees the service refuses: what each operator and function takes is checked beyond it.
  node.description =
    'A node of the JSON condition DSL. Beyond this shape, each operator and accumulate function takes values of its own kind, and accumulate nodes stand only where docs/dsl.md allows; a tree that does not suit is refused with 400 DSL_ERROR naming the path of every problem. POST /api/v1/validate checks a tree without storing it.';
  return node;
}

/**
 * One zod schema as OpenAPI JSON Schema. Named schemas (the `components` registry) are moved into `hoisted` and referred
 * to by $ref; the DSL field becomes a reference to ConditionNode, and documented refinements add their keywords.
 */
export function toOpenApiSchema(schema: z.ZodType, io: 'input' | 'output', hoisted: Record<string, unknown>): JsonSchema {
  const json = z.toJSONSchema(schema, {
    io,
    metadata: components,
    unrepresentable: 'any',
    override: (ctx) => {
      // `metadata` names the components only; the descriptions `.describe()` gave live in zod's global registry.
      const description = z.globalRegistry.get(ctx.zodSchema as unknown as z.ZodType)?.description;
      if (description !== undefined && ctx.jsonSchema.description === undefined) ctx.jsonSchema.description = description;
      if (ctx.zodSchema === conditionDslField) {
        for (const key of Object.keys(ctx.jsonSchema)) delete ctx.jsonSchema[key];
        ctx.jsonSchema.$ref = `${COMPONENT_PREFIX}ConditionNode`;
      }
      const refinements = refinementKeywords.get(ctx.zodSchema as unknown as z.ZodType);
      if (refinements !== undefined) Object.assign(ctx.jsonSchema, refinements);
    },
  }) as JsonSchema;
  const { $schema: _schema, $defs: defs, ...root } = json;
  for (const [id, definition] of Object.entries((defs ?? {}) as Record<string, unknown>)) hoisted[id] = rewriteRefs(definition);
  return rewriteRefs(root) as JsonSchema;
}

/** `#/$defs/X` → `#/components/schemas/X`, without recursion. */
function rewriteRefs(value: unknown): unknown {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node !== 'object' || node === null) continue;
    const record = node as Record<string, unknown>;
    if (typeof record.$ref === 'string' && record.$ref.startsWith('#/$defs/')) record.$ref = COMPONENT_PREFIX + record.$ref.slice(8);
    stack.push(...Object.values(record));
  }
  return value;
}

function readsNoBody(route: { route?: { method?: string | string[] } }): boolean {
  const method = route.route?.method;
  return method === 'GET' || method === 'HEAD' || (Array.isArray(method) && method.every((m) => m === 'GET' || m === 'HEAD'));
}

function isZod(value: unknown): value is z.ZodType {
  return value instanceof z.ZodType;
}

declare module 'fastify' {
  interface FastifySchema {
    /** Documents the ETag a route answers with (the resource's version) and, with `if-match`, the If-Match it honours. */
    entityTag?: 'etag' | 'if-match';
  }
}

const ETAG_HEADER = { type: 'string', description: 'The resource\'s version as a strong entity tag, e.g. "3".' };
const IF_MATCH_HEADERS = {
  type: 'object',
  properties: {
    'if-match': {
      type: 'string',
      description: 'Apply the change only at these versions (ETags, e.g. "3"); otherwise 412 PRECONDITION_FAILED. * matches any.',
    },
  },
};

export async function registerOpenApi(app: FastifyInstance, version: string, authentication: boolean): Promise<void> {
  const hoisted: Record<string, unknown> = { ConditionNode: conditionNodeComponent() };
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Rules Evaluation Service',
        version,
        description:
          'Evaluates JSON facts against business rules written in a JSON condition DSL. Errors are {detail, error_code}. Text fields of rules and rulesets refuse the character U+0000 and unpaired UTF-16 surrogates (400 VALIDATION_ERROR).',
      },
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <key> (RULES_API_KEYS).' },
          apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
        },
      },
      ...(authentication ? { security: [{ bearer: [] }, { apiKey: [] }] } : {}),
    },
    transform: (route) => {
      const { schema, url } = route;
      if (schema === undefined || schema === null) return { schema, url };
      const converted: Record<string, unknown> = { ...schema };
      for (const part of INPUT_PARTS) {
        const value = converted[part];
        if (isZod(value)) converted[part] = toOpenApiSchema(value, 'input', hoisted);
      }
      if (typeof converted.response === 'object' && converted.response !== null) {
        const responses: Record<string, unknown> = {};
        for (const [status, value] of Object.entries(converted.response)) {
          // A body-less answer (204): type null is how @fastify/swagger writes a response without content.
          if (value instanceof z.ZodVoid) responses[status] = { type: 'null', description: value.description ?? 'No body.' };
          else responses[status] = isZod(value) ? toOpenApiSchema(value, 'output', hoisted) : value;
        }
        // A GET body is never read, only refused (400): no 413 or 415 there.
        if (readsNoBody(route)) for (const status of ['413', '415']) delete responses[status];
        converted.response = responses;
      }
      const entityTag = converted.entityTag;
      delete converted.entityTag;
      if (entityTag !== undefined) documentEntityTags(converted, entityTag as 'etag' | 'if-match');
      documentResponseHeaders(converted);
      if ('openapiObject' in route) {
        const target = route.openapiObject as { components?: { schemas?: Record<string, unknown> } };
        target.components ??= {};
        target.components.schemas = { ...target.components.schemas, ...hoisted };
      }
      return { schema: converted as typeof schema, url };
    },
  });
  // The documentation routes are open even with authentication on.
  await app.register(async (docs) => {
    docs.addHook('onRoute', (route) => {
      route.config = { ...route.config, scope: 'public' };
    });
    // @fastify/swagger-ui redirects its page's old address to itself when a query string follows: to the page instead.
    docs.addHook('onRequest', async (request, reply) => {
      if (request.url.startsWith('/docs/static/index.html?')) return reply.redirect('/docs/');
      // The page's assets are sent whole: a range past their end would be a 416, a status no error code stands for.
      delete request.headers.range;
    });
    await docs.register(swaggerUi, { routePrefix: '/docs' });
    docs.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  });
}

/** The ETag of answers carrying the resource, and (`if-match`) the If-Match header, in the route's OpenAPI entry only. */
function documentEntityTags(schema: Record<string, unknown>, entityTag: 'etag' | 'if-match'): void {
  for (const status of ['200', '201']) addResponseHeader(schema, status, 'etag', ETAG_HEADER);
  if (entityTag === 'if-match') schema.headers = IF_MATCH_HEADERS;
}

const LOCATION_HEADER = { type: 'string', description: 'Path of the created resource, e.g. /api/v1/rules/42.' };
const LINK_HEADER = { type: 'string', description: 'Only when more items exist: <the same request with the next cursor>; rel="next".' };
const WWW_AUTHENTICATE_HEADER = { type: 'string', description: 'Bearer: send the key as Authorization: Bearer <key> or X-API-Key.' };

/** Headers every route sends the same way: Location on a creation, Link on a paged list, WWW-Authenticate on a 401. */
function documentResponseHeaders(schema: Record<string, unknown>): void {
  addResponseHeader(schema, '201', 'location', LOCATION_HEADER);
  const query = schema.querystring as { properties?: Record<string, unknown> } | undefined;
  if (query?.properties?.cursor !== undefined) addResponseHeader(schema, '200', 'link', LINK_HEADER);
  addResponseHeader(schema, '401', 'www-authenticate', WWW_AUTHENTICATE_HEADER);
}

function addResponseHeader(schema: Record<string, unknown>, status: string, name: string, header: object): void {
  const response = (schema.response as Record<string, Record<string, unknown>> | undefined)?.[status];
  if (response !== undefined) response.headers = { ...(response.headers as object | undefined), [name]: header };
}
