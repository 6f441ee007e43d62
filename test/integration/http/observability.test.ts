import { once } from 'node:events';
import { createServer, get as httpGet } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect, type Socket } from 'node:net';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stackEndpoints } from '../../helpers/stack.ts';
import { json, ruleDraft, startTestApp, type TestApp } from './harness.ts';

describe('health, readiness and the OpenAPI document', () => {
  let t: TestApp;
  let kafkaUp = true;
  let redisHangs = false;

  beforeAll(async () => {
    t = await startTestApp('pglite', {
      readiness: {
        kafka: () => kafkaUp,
        redis: () => (redisHangs ? new Promise<boolean>(() => undefined) : true),
        broken: () => {
          throw new Error('probe failed');
        },
      },
    });
  });
  afterAll(() => t?.cleanup());

  it('reports healthy with the version', async () => {
    const response = await json(t.app, 'GET', '/health');
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ status: 'healthy', version: '0.0.0-test' });
  });

  it('reports the state of each dependency, and 503 UNAVAILABLE when one is down, throws or does not answer', async () => {
    const first = await json(t.app, 'GET', '/health/ready');
    expect(first.statusCode).toBe(503);
    expect(first.json()).toEqual({
      status: 'unavailable',
      checks: { database: 'up', engine: 'up', executions: 'up', kafka: 'up', redis: 'up', broken: 'down' },
      details: { executions: { pending: 0, pending_bytes: 0 } },
      detail: 'Not ready: broken.',
      error_code: 'UNAVAILABLE',
    });

    kafkaUp = false;
    redisHangs = true;
    const down = await json(t.app, 'GET', '/health/ready');
    expect(down.statusCode).toBe(503);
    expect(down.json().checks).toEqual({ database: 'up', engine: 'up', executions: 'up', kafka: 'down', redis: 'down', broken: 'down' });
    kafkaUp = true;
    redisHangs = false;
  });

  it('serves an OpenAPI 3.1 document generated from the zod schemas', async () => {
    const response = await json(t.app, 'GET', '/openapi.json');
    expect(response.statusCode).toBe(200);
    const document = response.json();
    expect(document.openapi).toBe('3.1.0');
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining([
        '/health',
        '/health/ready',
        '/api/v1/evaluate',
        '/api/v1/evaluate/bulk',
        '/api/v1/explain',
        '/api/v1/simulate',
        '/api/v1/validate',
        '/api/v1/executions/{id}',
        '/api/v1/rules',
        '/api/v1/rules/{id}',
        '/api/v1/rules/{id}/versions',
        '/api/v1/rulesets',
        '/api/v1/rulesets/{id}',
        '/api/v1/audit',
        '/api/v1/audit/verify',
      ]),
    );
    const schemas = document.components.schemas;
    expect(document.paths['/api/v1/evaluate'].post.requestBody.content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/EvaluateRequest',
    });
    expect(schemas.EvaluateRequest).toMatchObject({ type: 'object', required: ['facts'], additionalProperties: false });
    expect(schemas.RuleRequest.properties.condition_dsl).toEqual({ $ref: '#/components/schemas/ConditionNode' });
    expect(schemas.ConditionNode.oneOf).toHaveLength(6);
    expect(JSON.stringify(schemas.ConditionNode)).toContain('"$ref":"#/components/schemas/ConditionNode"');
    expect(schemas.Error).toMatchObject({ required: ['detail', 'error_code'] });
    expect(schemas.Error.properties.error_code.enum).toContain('DSL_ERROR');
    // Field descriptions given in the zod schemas reach the document.
    expect(schemas.SessionEvaluation.properties.activated.description).toBe('Rules that hold now and did not after the previous write.');
    expect(schemas.Error.properties.detail.description).toEqual(expect.any(String));
    const listParameters = document.paths['/api/v1/rules'].get.parameters.map((parameter: { name: string }) => parameter.name);
    expect(listParameters).toEqual(['domain', 'enabled', 'tag', 'limit', 'cursor']);
    // Every $ref points at a component the document defines.
    const refs = [...JSON.stringify(document).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map((match) => match[1]!);
    for (const ref of new Set(refs)) expect(schemas, ref).toHaveProperty(ref);
  });

  it('describes request bodies so that a client validating against it sends what the service takes, and only that', async () => {
    const document = (await json(t.app, 'GET', '/openapi.json')).json();
    const ajv = new Ajv2020({ strict: false });
    ajv.addSchema({ $id: 'oas', components: document.components });
    const verdict = (path: string, method: string, body: unknown): boolean => {
      const schema = document.paths[path][method].requestBody.content['application/json'].schema;
      return ajv.validate(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"oas#/components/')), body);
    };
    const dsl = { type: 'condition', field: 'amount', op: '>', value: 5 };
    const cases: [string, string, string, unknown, boolean][] = [
      // /validate exists to answer `valid: false` for broken trees: the document must let them through.
      ['/api/v1/validate', 'post', '/api/v1/validate', { condition_dsl: { type: 'and', children: [] } }, true],
      ['/api/v1/validate', 'post', '/api/v1/validate', { condition_dsl: { ...dsl, op: 'LIKE' } }, true],
      ['/api/v1/validate', 'post', '/api/v1/validate', { rules: [] }, true],
      ['/api/v1/validate', 'post', '/api/v1/validate', {}, false],
      ['/api/v1/validate', 'post', '/api/v1/validate', { condition_dsl: dsl, rules: [] }, false],
      ['/api/v1/rules/{id}', 'patch', '/api/v1/rules/2147483000', {}, false],
      ['/api/v1/rules/{id}', 'patch', '/api/v1/rules/2147483000', { enabled: false }, true],
      // Names and domains are trimmed: only a blank one is refused, which the document shows as a pattern.
      ['/api/v1/evaluate', 'post', '/api/v1/evaluate', { facts: {}, domain: ' \t ' }, false],
      ['/api/v1/evaluate', 'post', '/api/v1/evaluate', { facts: {}, domain: ' payments ' }, true],
      ['/api/v1/rulesets', 'post', '/api/v1/rulesets', { name: '   ', domain: 'payments' }, false],
    ];
    for (const [path, method, url, body, accepted] of cases) {
      expect(verdict(path, method, body), `${method} ${path} ${JSON.stringify(body)}`).toBe(accepted);
      const answer = await json(t.app, method.toUpperCase() as 'POST', url, body);
      // Accepted bodies reach the use case (200, or 404 for the rule that does not exist); refused ones are 400.
      expect(answer.statusCode === 400, `${url} ${JSON.stringify(body)}: ${answer.body}`).toBe(!accepted);
    }
    const factBody = (factId: string) => ({ fact_id: factId, event: {} });
    expect(verdict('/api/v1/sessions/{id}/facts', 'post', factBody('f-1'))).toBe(true);
    expect(verdict('/api/v1/sessions/{id}/facts', 'post', factBody('..'))).toBe(false);
    // A route that takes no body still answers 413 and 415 for one that is too large or not JSON.
    const removal = document.paths['/api/v1/rules/{id}'].delete.responses;
    expect(Object.keys(removal)).toEqual(expect.arrayContaining(['413', '415']));
    const refused = await t.app.inject({
      method: 'DELETE',
      url: '/api/v1/rules/1',
      payload: 'x',
      headers: { 'content-type': 'text/plain' },
    });
    expect(refused.statusCode).toBe(415);
  });

  it('shows path and query numbers as the bounded integers the service takes', async () => {
    const document = (await json(t.app, 'GET', '/openapi.json')).json();
    const ajv = new Ajv2020({ strict: false });
    const cases: [string, string, string, number, boolean][] = [
      ['/api/v1/rules/{id}', 'id', '/api/v1/rules/', 0, false],
      ['/api/v1/rules/{id}', 'id', '/api/v1/rules/', 2_147_483_648, false],
      ['/api/v1/rules/{id}', 'id', '/api/v1/rules/', 2_147_483_647, true],
      ['/api/v1/rules', 'limit', '/api/v1/rules?limit=', 0, false],
      ['/api/v1/rules', 'limit', '/api/v1/rules?limit=', 1_001, false],
      ['/api/v1/rules', 'limit', '/api/v1/rules?limit=', 1_000, true],
      ['/api/v1/audit', 'entity_id', '/api/v1/audit?entity_id=', 0, false],
      ['/api/v1/audit', 'entity_id', '/api/v1/audit?entity_id=', 9_999_999_999, false],
      ['/api/v1/audit', 'entity_id', '/api/v1/audit?entity_id=', 7, true],
    ];
    for (const [path, name, url, value, accepted] of cases) {
      const parameter = (document.paths[path].get.parameters as { name: string; schema: object }[]).find((p) => p.name === name)!;
      expect(ajv.validate(parameter.schema, value), `${path} ${name}=${value}`).toBe(accepted);
      const answer = await json(t.app, 'GET', `${url}${value}`);
      expect(answer.statusCode === 400, `${url}${value}: ${answer.body}`).toBe(!accepted);
    }
  });

  it('serves the browsable documentation page', async () => {
    const response = await json(t.app, 'GET', '/docs');
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toContain('text/html');
    expect(response.body).toContain('Swagger UI');
    // A path that climbs out of the page's static folder names nothing: 404, not a scope refusal. Sent raw over a
    // socket, as inject and fetch would resolve the dots first.
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = t.app.server.address() as AddressInfo;
    const outside = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const request = httpGet({ host: '127.0.0.1', port, path: '/docs/static/%2e%2e/%2e%2e/package.json' }, (response) => {
        let body = '';
        response.on('data', (chunk: Buffer) => (body += chunk.toString()));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      });
      request.on('error', reject);
    });
    expect(outside.status).toBe(404);
    expect(JSON.parse(outside.body)).toEqual({ detail: 'No such resource.', error_code: 'NOT_FOUND' });
    // The page's old address leads to the page, with a query string too (the UI's own redirect led back to itself).
    for (const url of ['/docs/static/index.html', '/docs/static/index.html?x=1']) {
      const redirect = await json(t.app, 'GET', url);
      expect(redirect.statusCode, url).toBe(302);
      expect(redirect.headers.location, url).toBe('/docs/');
    }
    // Its assets come whole, whatever range is asked: a 416 would have no error code (it was answered 400).
    for (const range of ['bytes=99999999-', 'bytes=0-9']) {
      const asset = await t.app.inject({ method: 'GET', url: '/docs/static/swagger-ui.css', headers: { range } });
      expect(asset.statusCode, range).toBe(200);
      expect(asset.body.length, range).toBeGreaterThan(1_000);
    }
  });

  it('has no metrics route unless RULES_METRICS=prometheus', async () => {
    const response = await json(t.app, 'GET', '/api/v1/metrics');
    expect(response.statusCode).toBe(404);
    expect(response.json().error_code).toBe('NOT_FOUND');
  });
});

describe('readiness with every dependency up', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp('pglite', {
      readiness: { kafka: () => true },
      readinessDetails: {
        kafka: () => ({ status: 'running', assigned_partitions: [0, 1, 2], waiting_for_store: false }),
        broken: () => {
          throw new Error('cannot describe itself');
        },
      },
    });
  });
  afterAll(() => t?.cleanup());

  it('answers 200 ready, with the details each dependency gives and the execution backlog', async () => {
    const ready = await json(t.app, 'GET', '/health/ready');
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toEqual({
      status: 'ready',
      checks: { database: 'up', engine: 'up', executions: 'up', kafka: 'up' },
      details: {
        executions: { pending: 0, pending_bytes: 0 },
        kafka: { status: 'running', assigned_partitions: [0, 1, 2], waiting_for_store: false },
      },
    });
  });

  it('counts executions recorded but not yet written', async () => {
    t.store.executions.record({
      execution_id: '01a20000-0000-7000-8000-000000000001',
      source: 'http',
      domain: null,
      facts: {},
      fired_rules: [],
      actions: [],
      latency_ms: 0,
      revision: 0,
      created_at: new Date().toISOString(),
    });
    const ready = await json(t.app, 'GET', '/health/ready');
    expect(ready.json().details.executions.pending).toBeGreaterThanOrEqual(1);
    expect(ready.json().details.executions.pending_bytes).toBeGreaterThan(0);
    await t.store.executions.flush();
    expect((await json(t.app, 'GET', '/health/ready')).json().details.executions).toEqual({ pending: 0, pending_bytes: 0 });
  });

  it('answers 503 once the database is closed', async () => {
    await t.store.close();
    const down = await json(t.app, 'GET', '/health/ready');
    expect(down.statusCode).toBe(503);
    expect(down.json().checks.database).toBe('down');
  });
});

describe('Prometheus metrics (RULES_METRICS=prometheus)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp('pglite', { env: { RULES_METRICS: 'prometheus' } });
  });
  afterAll(() => t?.cleanup());

  it('exposes request counts and latencies, evaluations, fired rules and the engine signals as Prometheus text', async () => {
    const rule = (await json(t.app, 'POST', '/api/v1/rules', ruleDraft('counted'))).json();
    await json(t.app, 'POST', '/api/v1/evaluate', { facts: { amount: 500 } });
    await json(t.app, 'POST', '/api/v1/evaluate/bulk', { facts: [{ amount: 500 }, { amount: 1 }, { amount: 900 }] });
    await json(t.app, 'POST', '/api/v1/evaluate', { facts: 'not facts' });

    const response = await json(t.app, 'GET', '/api/v1/metrics');
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = response.body;
    expect(text).toContain('rules_evaluations_total{source="http"} 1');
    expect(text).toContain('rules_evaluations_total{source="bulk"} 3');
    expect(text).toContain('rules_fired_total{source="bulk"} 2');
    expect(text).toMatch(/rules_evaluation_latency_ms_count\{source="http"\} 1/);
    expect(text).toContain('http_requests_total{method="POST",route="/api/v1/evaluate",status_code="200"} 1');
    expect(text).toContain('http_requests_total{method="POST",route="/api/v1/evaluate",status_code="400"} 1');
    expect(text).toMatch(
      /http_request_duration_seconds_bucket\{le="[^"]+",method="POST",route="\/api\/v1\/evaluate\/bulk",status_code="200"\} 1/,
    );
    expect(text).toContain(`rules_engine_revision ${t.catalog.revision}`);
    expect(text).toContain('rules_engine_rules 1');
    expect(text).toMatch(/rules_engine_alpha_prune_ratio [\d.]+/);
    expect(text).toMatch(/rules_engine_eval_latency_ms_p95 [\d.e-]+/);
    expect(text).toContain('# TYPE rules_engine_candidates_per_fact_out gauge');
    // The process and Node.js series beside them: memory, heap, event-loop lag.
    expect(text).toMatch(/^process_resident_memory_bytes \d+/m);
    expect(text).toMatch(/^nodejs_heap_size_used_bytes \d+/m);
    expect(text).toContain('# TYPE nodejs_eventloop_lag_p99_seconds gauge');
    expect(rule.id).toBeGreaterThan(0);
  });

  it('leaves out a signal with no value yet instead of reporting 0', async () => {
    // No session has been written here: the session signals have no value.
    const text = (await json(t.app, 'GET', '/api/v1/metrics')).body;
    for (const name of ['rules_engine_working_memory_size', 'rules_engine_node_memory_hit_rate']) {
      expect(text).toContain(`# TYPE ${name} gauge`);
      expect(text).not.toMatch(new RegExp(`^${name} `, 'm'));
    }
  });

  it('counts requests Fastify refuses before routing (a malformed URL, an over-long parameter)', async () => {
    const before = (await json(t.app, 'GET', '/api/v1/metrics')).body;
    const counted = (text: string): number =>
      Number(/^http_requests_total\{method="GET",route="unmatched",status_code="400"\} (\d+)$/m.exec(text)?.[1] ?? 0);
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/%ZZ' })).statusCode).toBe(400);
    expect((await t.app.inject({ method: 'GET', url: `/api/v1/sessions/${'x'.repeat(600)}` })).statusCode).toBe(400);
    const after = (await json(t.app, 'GET', '/api/v1/metrics')).body;
    expect(counted(after) - counted(before)).toBe(2);
    expect(after).toMatch(/^http_request_duration_seconds_count\{method="GET",route="unmatched",status_code="400"\} [1-9]/m);
  });

  it('lists what the health routes answer besides their own statuses: malformed HTTP, a stalled request, headers too large, a fault', async () => {
    const document = (await json(t.app, 'GET', '/openapi.json')).json();
    expect(Object.keys(document.paths['/health'].get.responses).sort()).toEqual(['200', '400', '408', '431', '500']);
    expect(Object.keys(document.paths['/health/ready'].get.responses).sort()).toEqual(['200', '400', '408', '431', '500', '503']);
    expect(document.paths['/health'].get.responses['431'].content['application/json'].schema).toBeDefined();
  });

  it('states in the OpenAPI document the checks its schemas cannot show: DSL values per operator, fact limits, storable text', async () => {
    const document = (await json(t.app, 'GET', '/openapi.json')).json();
    expect(document.components.schemas.ConditionNode.description).toContain('400 DSL_ERROR');
    expect(JSON.stringify(document.components.schemas.EvaluateRequest)).toContain('no array of more than 10,000 elements');
    expect(document.info.description).toContain('U+0000');
  });

  it('lists the metrics route in the OpenAPI document, with its text body and its error statuses', async () => {
    const document = (await json(t.app, 'GET', '/openapi.json')).json();
    const responses = document.paths['/api/v1/metrics'].get.responses;
    // A GET's body is refused unread (400): no 413 or 415.
    expect(Object.keys(responses).sort()).toEqual(['200', '400', '401', '403', '408', '431', '500', '503']);
    expect(Object.keys(responses['200'].content)).toEqual(['text/plain; version=0.0.4; charset=utf-8']);
    expect(responses['403'].content['application/json'].schema).toBeDefined();
  });
});

describe('readiness after the event loop was held up', () => {
  let t: TestApp;
  let client: Socket;
  let probed = false;

  beforeAll(async () => {
    // A dependency in another process that answers at once: Redis, asked PING over a socket of its own.
    const redis = new URL(stackEndpoints().redisUrl ?? 'redis://127.0.0.1:6379');
    client = connect(Number(redis.port || 6379), redis.hostname);
    client.on('error', () => undefined);
    await once(client, 'connect');
    t = await startTestApp('pglite', {
      readiness: {
        echo: () =>
          new Promise<boolean>((resolve) => {
            probed = true;
            client.once('data', (reply: Buffer) => resolve(reply.toString().startsWith('+PONG')));
            client.write('PING\r\n');
          }),
      },
    });
  });
  afterAll(async () => {
    client?.destroy();
    await t?.cleanup();
  });

  it('counts a dependency that answered while a long synchronous task held the loop as up', async () => {
    const answer = json(t.app, 'GET', '/health/ready');
    while (!probed) await new Promise((resolve) => setImmediate(resolve));
    // Longer than the readiness timeout (2 s), as a run of costly evaluations once did: the answer arrives meanwhile.
    const until = Date.now() + 2_300;
    while (Date.now() < until) {
      // Busy: nothing else runs.
    }
    const response = await answer;
    expect(response.json().checks).toMatchObject({ echo: 'up', database: 'up' });
    expect(response.statusCode).toBe(200);
  });
});

describe('requests that reach the app while it shuts down', () => {
  it('answer 503 UNAVAILABLE, except readiness, which says why in its own shape, and liveness, which still holds', async () => {
    const t = await startTestApp('pglite');
    // The app's own router behind a server of the test's: the app's listener is gone once shutdown begins.
    const server = createServer((request, response) => t.app.routing(request, response));
    try {
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
      const { port } = server.address() as AddressInfo;
      await t.app.close();
      const get = async (path: string) => {
        const response = await fetch(`http://127.0.0.1:${port}${path}`);
        return { status: response.status, body: (await response.json()) as Record<string, unknown> };
      };
      const ready = await get('/health/ready');
      expect(ready.status).toBe(503);
      expect(ready.body).toMatchObject({
        status: 'unavailable',
        checks: { database: 'up', engine: 'up', executions: 'up' },
        detail: 'Not ready: shutting down.',
        error_code: 'UNAVAILABLE',
      });
      expect(await get('/health')).toEqual({ status: 200, body: { status: 'healthy', version: '0.0.0-test' } });
      expect(await get('/api/v1/rules')).toEqual({
        status: 503,
        body: { detail: 'The service is shutting down; retry on another instance.', error_code: 'UNAVAILABLE' },
      });
    } finally {
      server.close();
      await t.cleanup();
    }
  });
});
