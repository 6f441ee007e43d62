import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, ruleDraft, STORE_KINDS, startTestApp, type TestApp } from './harness.ts';

const ADMIN = `admin-${randomUUID()}`;
const EVALUATE = `evaluate-${randomUUID()}`;
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

describe.each(STORE_KINDS)('API keys and scopes (%s)', (kind) => {
  let t: TestApp;
  let ruleId: number;

  beforeAll(async () => {
    t = await startTestApp(kind, { env: { RULES_API_KEYS: `ops=${ADMIN}:admin,${EVALUATE}:evaluate`, RULES_METRICS: 'prometheus' } });
    ruleId = (await json(t.app, 'POST', '/api/v1/rules', ruleDraft('guarded'), bearer(ADMIN))).json().id;
  });
  afterAll(() => t?.cleanup());

  it('answers 401 UNAUTHORIZED without a key, with WWW-Authenticate', async () => {
    const response = await json(t.app, 'POST', '/api/v1/evaluate', { facts: {} });
    expect(response.statusCode).toBe(401);
    expect(response.headers['www-authenticate']).toBe('Bearer');
    expect(response.json()).toEqual({ detail: 'Send an API key as Authorization: Bearer <key> or X-API-Key.', error_code: 'UNAUTHORIZED' });
  });

  it('answers 401 for an unknown key, never echoing it', async () => {
    const response = await json(t.app, 'POST', '/api/v1/evaluate', { facts: {} }, bearer('guess'));
    expect(response.statusCode).toBe(401);
    expect(response.json()).toEqual({ detail: 'The API key is not valid.', error_code: 'UNAUTHORIZED' });
  });

  it('lets an evaluate key evaluate, bulk, explain, simulate, validate and read executions, by either header', async () => {
    const evaluated = await json(t.app, 'POST', '/api/v1/evaluate', { facts: { amount: 500 } }, bearer(EVALUATE));
    expect(evaluated.statusCode).toBe(200);
    const viaHeader = await json(t.app, 'POST', '/api/v1/evaluate', { facts: {} }, { 'x-api-key': EVALUATE });
    expect(viaHeader.statusCode).toBe(200);
    const calls = [
      json(t.app, 'POST', '/api/v1/evaluate/bulk', { facts: [{}] }, bearer(EVALUATE)),
      json(t.app, 'POST', '/api/v1/explain', { rule_id: ruleId, facts: {} }, bearer(EVALUATE)),
      json(t.app, 'POST', '/api/v1/simulate', { facts: {} }, bearer(EVALUATE)),
      json(t.app, 'POST', '/api/v1/validate', { condition_dsl: { type: 'exists', field: 'a' } }, bearer(EVALUATE)),
      json(t.app, 'GET', `/api/v1/executions/${evaluated.json().execution_id}`, undefined, bearer(EVALUATE)),
    ];
    for (const response of await Promise.all(calls)) expect(response.statusCode).toBe(200);
  });

  it('answers 403 FORBIDDEN when an evaluate key manages rules, rulesets, audit or metrics', async () => {
    const calls = [
      json(t.app, 'POST', '/api/v1/rules', ruleDraft('nope'), bearer(EVALUATE)),
      json(t.app, 'GET', '/api/v1/rules', undefined, bearer(EVALUATE)),
      json(t.app, 'GET', `/api/v1/rules/${ruleId}`, undefined, bearer(EVALUATE)),
      json(t.app, 'DELETE', `/api/v1/rules/${ruleId}`, undefined, bearer(EVALUATE)),
      json(t.app, 'POST', '/api/v1/rulesets', { name: 'x', domain: 'y' }, bearer(EVALUATE)),
      json(t.app, 'GET', '/api/v1/audit', undefined, bearer(EVALUATE)),
      json(t.app, 'GET', '/api/v1/audit/verify', undefined, bearer(EVALUATE)),
      json(t.app, 'GET', '/api/v1/metrics', undefined, bearer(EVALUATE)),
    ];
    for (const response of await Promise.all(calls)) {
      expect(response.statusCode).toBe(403);
      expect(response.json()).toEqual({
        detail: 'The key "key-2" has scope evaluate; this operation needs admin.',
        error_code: 'FORBIDDEN',
      });
    }
    expect((await json(t.app, 'GET', `/api/v1/rules/${ruleId}`, undefined, bearer(ADMIN))).statusCode).toBe(200);
  });

  it('lets an admin key do everything, and records its name, never the key, as the audit actor', async () => {
    const rule = (await json(t.app, 'POST', '/api/v1/rules', ruleDraft(`by-admin-${randomUUID()}`), bearer(ADMIN))).json();
    expect((await json(t.app, 'POST', '/api/v1/evaluate', { facts: {} }, bearer(ADMIN))).statusCode).toBe(200);
    const audit = await json(t.app, 'GET', `/api/v1/audit?entity_type=rule&entity_id=${rule.id}`, undefined, bearer(ADMIN));
    expect(audit.json()[0].actor).toBe('ops');
    expect(audit.body).not.toContain(ADMIN);
    const versions = await json(t.app, 'GET', `/api/v1/rules/${rule.id}/versions`, undefined, bearer(ADMIN));
    expect(versions.json()[0].actor).toBe('ops');
    expect((await json(t.app, 'GET', '/api/v1/metrics', undefined, bearer(ADMIN))).statusCode).toBe(200);
  });

  it('keeps health, readiness, the OpenAPI document and the docs page open', async () => {
    for (const url of ['/health', '/health/ready', '/openapi.json', '/docs', '/docs/static/swagger-ui.css', '/docs/json']) {
      expect((await json(t.app, 'GET', url)).statusCode, url).toBe(200);
    }
  });

  it('answers an unknown /api route with 401 to strangers and 404 to key holders', async () => {
    expect((await json(t.app, 'GET', '/api/v1/secret-route')).statusCode).toBe(401);
    const known = await json(t.app, 'GET', '/api/v1/secret-route', undefined, bearer(EVALUATE));
    expect(known.statusCode).toBe(404);
    expect(known.json().error_code).toBe('NOT_FOUND');
  });

  it('answers an absolute-form or percent-encoded path as routed: strangers get 401 whether the route exists or not', async () => {
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = t.app.server.address() as AddressInfo;
    const statusOf = (target: string, headers = '') =>
      new Promise<number>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () =>
          socket.end(`GET ${target} HTTP/1.1\r\nHost: x\r\n${headers}Connection: close\r\n\r\n`),
        );
        let answer = '';
        socket.setEncoding('utf8').on('data', (chunk) => {
          answer += chunk;
        });
        socket.on('error', reject).on('close', () => resolve(Number(answer.split(' ')[1])));
      });
    expect(await statusOf('http://x/api/v1/secret-route')).toBe(401);
    // Percent-encoded as the router decodes it, in either form.
    expect(await statusOf('/%61pi/v1/secret-route')).toBe(401);
    expect(await statusOf('http://x/%61pi/v1/secret-route')).toBe(401);
    expect(await statusOf('/%61pi/v1/secret-route#%')).toBe(401);
    expect(await statusOf('/%61pi/v1/secret-route', `Authorization: Bearer ${EVALUATE}\r\n`)).toBe(404);
    expect(await statusOf('http://x/api/v1/rules')).toBe(401);
    expect(await statusOf('http://x/api/v1/secret-route', `Authorization: Bearer ${EVALUATE}\r\n`)).toBe(404);
    expect(await statusOf('http://x/health')).toBe(200);
  });

  it('declares both key headers as security schemes in the OpenAPI document', async () => {
    const document = (await json(t.app, 'GET', '/openapi.json')).json();
    expect(Object.keys(document.components.securitySchemes)).toEqual(['bearer', 'apiKey']);
    expect(document.security).toEqual([{ bearer: [] }, { apiKey: [] }]);
    // The health routes answer without a key, and the document says so.
    expect(document.paths['/health'].get.security).toEqual([]);
    expect(document.paths['/health/ready'].get.security).toEqual([]);
    expect(document.paths['/api/v1/evaluate'].post.security).toBeUndefined();
    // Any API route may refuse an undeclared query parameter (400) or answer while shutting down (503).
    expect(Object.keys(document.paths['/api/v1/audit/verify'].get.responses)).toEqual(expect.arrayContaining(['400', '503']));
    expect(Object.keys(document.paths['/api/v1/rules'].get.responses)).toEqual(expect.arrayContaining(['400', '503']));
  });
});
