import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { Readable } from 'node:stream';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gt, json, ruleDraft, STORE_KINDS, startTestApp, type TestApp } from './harness.ts';

const BODY_LIMIT = 4_096;
const BULK_MAX = 5;

function nest(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = { leaf: 1 };
  for (let level = 1; level < depth; level++) value = { next: value };
  return value;
}

describe.each(STORE_KINDS)('bad input over HTTP (%s)', (kind) => {
  let t: TestApp;
  let ruleId: number;
  let snapshot: { revision: number; rules: unknown[] };

  beforeAll(async () => {
    t = await startTestApp(kind, { env: { RULES_BODY_LIMIT: String(BODY_LIMIT), RULES_BULK_MAX: String(BULK_MAX) } });
    ruleId = (await json(t.app, 'POST', '/api/v1/rules', ruleDraft('existing'))).json().id;
    snapshot = { revision: await t.store.rules.revision(), rules: await t.store.rules.all() };
  });
  afterAll(async () => {
    // No refused request may have changed the stored rules.
    expect(await t.store.rules.revision()).toBe(snapshot.revision);
    expect(await t.store.rules.all()).toEqual(snapshot.rules);
    await t.cleanup();
  });

  const raw = (
    url: string,
    payload: string,
    contentType: string | undefined = 'application/json',
    method: 'POST' | 'PUT' | 'PATCH' = 'POST',
  ) => t.app.inject({ method, url, payload, headers: contentType === undefined ? {} : { 'content-type': contentType } });

  const expectError = (response: { statusCode: number; json(): unknown }, status: number, code: string, detail?: string | RegExp) => {
    expect(response.statusCode).toBe(status);
    const body = response.json() as { detail: string; error_code: string };
    expect(Object.keys(body).sort()).toEqual(['detail', 'error_code']);
    expect(body.error_code).toBe(code);
    if (typeof detail === 'string') expect(body.detail).toBe(detail);
    else if (detail !== undefined) expect(body.detail).toMatch(detail);
  };

  it('answers malformed JSON with 400 VALIDATION_ERROR', async () => {
    expectError(await raw('/api/v1/evaluate', '{"facts": {'), 400, 'VALIDATION_ERROR', /^The request body is not valid JSON: /);
    expectError(await raw('/api/v1/evaluate', "{'facts': {}}"), 400, 'VALIDATION_ERROR', /not valid JSON/);
    expectError(await raw('/api/v1/evaluate', ''), 400, 'VALIDATION_ERROR');
  });

  it.each([
    ['facts as an array', { facts: [1, 2] }, 'body.facts'],
    ['facts as a string', { facts: 'amount=5' }, 'body.facts'],
    ['facts missing', { domain: 'x' }, 'body.facts'],
    ['domain as a number', { facts: {}, domain: 7 }, 'body.domain'],
    ['an empty domain', { facts: {}, domain: '  ' }, 'body.domain'],
    ['a body that is not an object', [1, 2, 3], 'body'],
    ['an unknown field', { facts: {}, domian: 'typo' }, 'body: Unrecognized key: "domian"'],
  ])('answers %s on evaluate with 400 naming the field', async (_label, body, where) => {
    expectError(
      await json(t.app, 'POST', '/api/v1/evaluate', body),
      400,
      'VALIDATION_ERROR',
      new RegExp(`^${where.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
    );
  });

  it.each([
    ['explain with a string rule_id', '/api/v1/explain', { rule_id: '1', facts: {} }],
    ['explain with rule_id 0', '/api/v1/explain', { rule_id: 0, facts: {} }],
    ['bulk with facts as an object', '/api/v1/evaluate/bulk', { facts: { a: 1 } }],
    ['bulk with one bad fact', '/api/v1/evaluate/bulk', { facts: [{}, 3] }],
    ['simulate with an unknown rule field', '/api/v1/simulate', { rules: [{ ...ruleDraft('x'), salience: 1 }], facts: {} }],
    ['simulate with an empty rule list', '/api/v1/simulate', { rules: [], facts: {} }],
    // A rule that could never be stored is not previewed either.
    ['simulate with a priority beyond 32 bits', '/api/v1/simulate', { rules: [ruleDraft('x', { priority: 3_000_000_000 })], facts: {} }],
    ['validate with an unknown field', '/api/v1/validate', { condition_dsl: gt('a', 1), strict: true }],
    ['a rule with an unknown field', '/api/v1/rules', { ...ruleDraft('x'), salience: 1 }],
    ['a rule without an action', '/api/v1/rules', { name: 'x', condition_dsl: gt('a', 1) }],
    ['a rule without a condition', '/api/v1/rules', { name: 'x', action: 'y' }],
    ['a rule with a priority beyond 32 bits', '/api/v1/rules', ruleDraft('x', { priority: 2 ** 31 })],
    ['a rule with a fractional priority', '/api/v1/rules', ruleDraft('x', { priority: 1.5 })],
    ['a rule with a 201-character name', '/api/v1/rules', ruleDraft('n'.repeat(201))],
    ['a rule with tags that are not strings', '/api/v1/rules', ruleDraft('x', { tags: [1] })],
    ['a rule with enabled as a string', '/api/v1/rules', ruleDraft('x', { enabled: 'yes' })],
  ])('answers %s with 400 VALIDATION_ERROR', async (_label, url, body) => {
    expectError(await json(t.app, 'POST', url, body), 400, 'VALIDATION_ERROR');
  });

  it('answers a condition missing from a rule with a clear message', async () => {
    expectError(
      await json(t.app, 'POST', '/api/v1/rules', { name: 'x', action: 'y' }),
      400,
      'VALIDATION_ERROR',
      'body.condition_dsl: condition_dsl is required',
    );
  });

  it('refuses __proto__ and constructor.prototype keys with 400, leaving Object.prototype alone', async () => {
    expectError(
      await raw('/api/v1/evaluate', '{"facts":{"__proto__":{"polluted":true}}}'),
      400,
      'VALIDATION_ERROR',
      'The request body contains the forbidden key "__proto__" at facts.__proto__.',
    );
    expectError(
      await raw('/api/v1/rules', '{"name":"x","action":"y","condition_dsl":{"constructor":{"prototype":{"polluted":true}}}}'),
      400,
      'VALIDATION_ERROR',
    );
    expectError(await raw('/api/v1/evaluate/bulk', '{"facts":[{"a":{"__proto__":null}}]}'), 400, 'VALIDATION_ERROR');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('refuses a number a double cannot hold with 400 naming where, on every route that takes JSON', async () => {
    const detail = 'The request body holds a number beyond the range of a double (±1.7976931348623157e308) at facts.amount.';
    expectError(await raw('/api/v1/evaluate', '{"facts":{"amount":1e400}}'), 400, 'VALIDATION_ERROR', detail);
    expectError(await raw('/api/v1/evaluate/bulk', '{"facts":[{"amount":1},{"amount":-1e400}]}'), 400, 'VALIDATION_ERROR');
    expectError(
      await raw('/api/v1/rules', '{"name":"x","action":"y","condition_dsl":{"type":"condition","field":"a","op":">","value":1e999}}'),
      400,
      'VALIDATION_ERROR',
    );
    // The largest double and the text "1e400" are fine.
    expect((await raw('/api/v1/evaluate', '{"facts":{"amount":1.7976931348623157e308,"note":"1e400"}}')).statusCode).toBe(200);
  });

  it('refuses __proto__ and constructor keys spelled with \\u escapes just the same', async () => {
    expectError(
      await raw('/api/v1/evaluate', '{"facts":{"\\u005f_proto__":{"amount":500}}}'),
      400,
      'VALIDATION_ERROR',
      'The request body contains the forbidden key "__proto__" at facts.__proto__.',
    );
    expectError(await raw('/api/v1/evaluate/bulk', '{"facts":[{"construct\\u006fr":{"prototype":{"x":1}}}]}'), 400, 'VALIDATION_ERROR');
    // An escape that spells nothing forbidden is still just text.
    const plain = await raw('/api/v1/evaluate', '{"facts":{"caf\\u00e9":1}}');
    expect(plain.statusCode).toBe(200);
  });

  it('refuses U+0000 and unpaired surrogates in everything the store keeps, with 400 naming the field', async () => {
    const rule = (patch: string) =>
      `{"name":"text","action":"x","condition_dsl":{"type":"condition","field":"a","op":"==","value":1}${patch}}`;
    expectError(
      await raw('/api/v1/rules', '{"name":"r\\u0000","action":"x","condition_dsl":{"type":"condition","field":"a","op":"==","value":1}}'),
      400,
      'VALIDATION_ERROR',
      /^body\.name: name must not contain the character U\+0000/,
    );
    expectError(await raw('/api/v1/rules', rule(',"description":"\\ud800"')), 400, 'VALIDATION_ERROR', /^body\.description: /);
    expectError(await raw('/api/v1/rules', rule(',"tags":["ok","a\\u0000"]')), 400, 'VALIDATION_ERROR', /^body\.tags\[1\]: /);
    expectError(
      await raw('/api/v1/rules', '{"name":"t","action":"x","condition_dsl":{"type":"condition","field":"a","op":"==","value":"\\udc00x"}}'),
      400,
      'DSL_ERROR',
      /root\.value: a string value must not contain/,
    );
    expectError(
      await raw(`/api/v1/rules/${ruleId}`, '{"description":"\\u0000"}', 'application/json', 'PATCH'),
      400,
      'VALIDATION_ERROR',
      /^body\.description: /,
    );
    expectError(await raw('/api/v1/rulesets', '{"name":"rs\\u0000","domain":"payments"}'), 400, 'VALIDATION_ERROR', /^body\.name: /);
    expectError(await json(t.app, 'GET', '/api/v1/rules?domain=a%00b'), 400, 'VALIDATION_ERROR', /^query\.domain: /);
    expectError(await json(t.app, 'GET', '/api/v1/rules?tag=a%00b'), 400, 'VALIDATION_ERROR', /^query\.tag: /);
    // validate gives the answer create would: not valid, at the value's path. A surrogate pair (an emoji) is fine.
    const checked = await raw('/api/v1/validate', '{"condition_dsl":{"type":"condition","field":"a","op":"==","value":"\\u0000"}}');
    expect(checked.json()).toMatchObject({ valid: false, errors: [{ path: 'root.value' }] });
    const emoji = await raw('/api/v1/validate', '{"condition_dsl":{"type":"condition","field":"a","op":"==","value":"\\ud83d\\ude00"}}');
    expect(emoji.json()).toEqual({ valid: true, errors: [] });
  });

  it('refuses an audit time range outside the years 1 to 9999 with 400', async () => {
    expectError(await json(t.app, 'GET', '/api/v1/audit?since=0000-01-01T00:00:00Z'), 400, 'VALIDATION_ERROR', /^query\.since: /);
    expectError(await json(t.app, 'GET', '/api/v1/audit?until=0000-06-01T00:00:00Z'), 400, 'VALIDATION_ERROR', /^query\.until: /);
    expectError(await json(t.app, 'GET', '/api/v1/audit?since=9999-12-31T23:00:00-05:00'), 400, 'VALIDATION_ERROR', /^query\.since: /);
    expect((await json(t.app, 'GET', '/api/v1/audit?since=0001-01-01T00:00:00Z')).statusCode).toBe(200);
    expect((await json(t.app, 'GET', '/api/v1/audit?until=9999-12-31T23:59:59Z')).statusCode).toBe(200);
    // Rounded up to a whole millisecond, the last instants of 9999 would fall in 10000.
    expect((await json(t.app, 'GET', '/api/v1/audit?until=9999-12-31T23:59:59.9999Z')).statusCode).toBe(200);
    expect((await json(t.app, 'GET', '/api/v1/audit?since=9999-12-31T23:59:59.999999Z')).statusCode).toBe(200);
  });

  it('answers a malformed path or an over-long path segment in the error shape, and routes ids of 200 characters', async () => {
    expectError(
      await json(t.app, 'GET', '/api/v1/rules/%ZZ'),
      400,
      'VALIDATION_ERROR',
      'The request path is not valid percent-encoded UTF-8.',
    );
    expectError(await json(t.app, 'GET', `/api/v1/sessions/${'a'.repeat(600)}`), 400, 'VALIDATION_ERROR', /^A path segment is longer than/);
    const longId = `s-${'a'.repeat(198)}`;
    expectError(await json(t.app, 'GET', `/api/v1/sessions/${longId}`), 404, 'SESSION_NOT_FOUND');
    expectError(await json(t.app, 'DELETE', `/api/v1/sessions/${longId}/facts/${'f'.repeat(200)}`), 404, 'SESSION_NOT_FOUND');
  });

  it('refuses query parameters a route does not declare, and a body on a route that takes none', async () => {
    expectError(await json(t.app, 'GET', `/api/v1/rules/${ruleId}?foo=bar`), 400, 'VALIDATION_ERROR', 'query: Unrecognized key: "foo"');
    expectError(await json(t.app, 'GET', '/api/v1/audit/verify?foo=bar'), 400, 'VALIDATION_ERROR', /^query: /);
    // Written first, so the background writer cannot empty the backlog between the two reads.
    await t.store.executions.flush();
    expectError(await json(t.app, 'POST', '/api/v1/evaluate?dry_run=true', { facts: {} }), 400, 'VALIDATION_ERROR', /^query: .*"dry_run"/);
    expect(t.store.executions.pendingCount()).toBe(0);
    // The rule survives: a DELETE with a body is refused before it runs (afterAll checks the store is unchanged).
    expectError(await json(t.app, 'DELETE', `/api/v1/rules/${ruleId}`, { soft: true }), 400, 'VALIDATION_ERROR', /takes no body/);
    expect((await json(t.app, 'GET', `/api/v1/rules/${ruleId}`)).statusCode).toBe(200);
    // A GET body is never parsed, so a filter sent there would silently do nothing: refused whatever its type.
    expectError(
      await json(t.app, 'GET', '/api/v1/rules', { domain: 'typo' }),
      400,
      'VALIDATION_ERROR',
      /GET \/api\/v1\/rules takes no body/,
    );
    const plain = await t.app.inject({
      method: 'GET',
      url: '/api/v1/rules',
      headers: { 'content-type': 'text/plain' },
      payload: 'domain=x',
    });
    expectError(plain, 400, 'VALIDATION_ERROR', /takes no body/);
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/rules', headers: { 'content-length': '0' } })).statusCode).toBe(200);
    // A DELETE's body is read: an empty one is no body, however it is labelled or framed.
    const emptyDelete = async (headers: Record<string, string>, payload: string | Readable) =>
      (await t.app.inject({ method: 'DELETE', url: `/api/v1/sessions/${randomUUID()}`, headers, payload })).statusCode;
    expect(await emptyDelete({ 'content-type': 'text/plain', 'content-length': '0' }, '')).toBe(404);
    expect(await emptyDelete({ 'content-type': 'application/json', 'transfer-encoding': 'chunked' }, Readable.from([]))).toBe(404);
    expect(await emptyDelete({ 'content-type': 'text/plain', 'content-length': '1' }, 'x')).toBe(415);
    expect(await emptyDelete({ 'content-type': 'application/json', 'transfer-encoding': 'chunked' }, Readable.from(['{}']))).toBe(400);
    // JSON null is content: refused like any other, and the rule stays.
    const nullBody = await t.app.inject({
      method: 'DELETE',
      url: `/api/v1/rules/${ruleId}`,
      headers: { 'content-type': 'application/json' },
      payload: ' null ',
    });
    expectError(nullBody, 400, 'VALIDATION_ERROR', /takes no body/);
    expect((await json(t.app, 'GET', `/api/v1/rules/${ruleId}`)).statusCode).toBe(200);
    // An unknown route is 404 whatever body it was sent.
    for (const [type, payload] of [
      ['text/plain', 'hi'],
      ['application/json', '{bad'],
      ['application/json; charset=latin1', '{}'],
    ]) {
      const unknown = await t.app.inject({ method: 'POST', url: '/api/v1/nope', headers: { 'content-type': type! }, payload: payload! });
      expect(unknown.statusCode, type).toBe(404);
    }
    // Declared parameters still work, and a route without any answers a clean request.
    expect((await json(t.app, 'GET', '/api/v1/rules?limit=1')).statusCode).toBe(200);
    expect((await json(t.app, 'GET', '/api/v1/audit/verify')).statusCode).toBe(200);
  });

  it('validates a ruleset with exactly the fields and bounds of POST /api/v1/rules', async () => {
    const dsl = { type: 'condition', field: 'a', op: '==', value: 1 };
    const response = await json(t.app, 'POST', '/api/v1/validate', {
      rules: [
        { name: 'a', action: 'x', condition_dsl: dsl, id: 1 },
        { name: 'b', action: 'x', condition_dsl: dsl, priority: 10_000_000_000 },
      ],
    });
    expect(response.statusCode).toBe(200);
    const result = response.json() as { valid: boolean; errors: { path: string; message: string }[] };
    expect(result.valid).toBe(false);
    expect(result.errors.map((e) => e.path).sort()).toEqual(['rules[0]', 'rules[1].priority']);
    expect(result.errors.find((e) => e.path === 'rules[0]')?.message).toMatch(/Unrecognized key: "id"/);
  });

  it('accepts facts nested 64 levels deep and refuses 65', async () => {
    expect((await json(t.app, 'POST', '/api/v1/evaluate', { facts: nest(64) })).statusCode).toBe(200);
    expectError(
      await json(t.app, 'POST', '/api/v1/evaluate', { facts: nest(65) }),
      400,
      'VALIDATION_ERROR',
      'body.facts: must not be nested deeper than 64 levels',
    );
  });

  it('refuses a body nested far too deep without overflowing anything', async () => {
    const depth = BODY_LIMIT / 2 - 10;
    expectError(
      await raw('/api/v1/evaluate', `{"facts":${'['.repeat(depth)}${']'.repeat(depth)}}`),
      400,
      'VALIDATION_ERROR',
      /nested deeper than 128 levels/,
    );
    expectError(
      await raw('/api/v1/rules', `{"condition_dsl":${'{"type":"not","child":'.repeat(100)}{}${'}'.repeat(100)}}`),
      400,
      'VALIDATION_ERROR',
    );
    expect((await json(t.app, 'GET', '/health')).statusCode).toBe(200);
  });

  it(`answers a bulk request over RULES_BULK_MAX (${BULK_MAX}) with 413, before validating the facts`, async () => {
    expect((await json(t.app, 'POST', '/api/v1/evaluate/bulk', { facts: Array.from({ length: BULK_MAX }, () => ({})) })).statusCode).toBe(
      200,
    );
    expectError(
      await json(t.app, 'POST', '/api/v1/evaluate/bulk', { facts: Array.from({ length: BULK_MAX + 1 }, () => 'not even a fact') }),
      413,
      'PAYLOAD_TOO_LARGE',
      `facts holds ${BULK_MAX + 1} entries; at most ${BULK_MAX} (RULES_BULK_MAX) per request.`,
    );
  });

  it(`answers a body over RULES_BODY_LIMIT (${BODY_LIMIT} bytes) with 413`, async () => {
    expectError(
      await json(t.app, 'POST', '/api/v1/evaluate', { facts: { blob: 'x'.repeat(BODY_LIMIT) } }),
      413,
      'PAYLOAD_TOO_LARGE',
      `The request body is larger than the limit of ${BODY_LIMIT} bytes.`,
    );
  });

  it.each([
    ['text/plain', 'text/plain'],
    ['application/xml', 'application/xml'],
    ['form data', 'application/x-www-form-urlencoded'],
    ['a JSON look-alike', 'application/json-patch+json'],
  ])('answers a body sent as %s with 415 (a body without any Content-Type is covered in server.test.ts)', async (_label, contentType) => {
    expectError(
      await raw('/api/v1/evaluate', '{"facts":{}}', contentType),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
      'Request bodies must be sent with Content-Type: application/json.',
    );
  });

  it('accepts application/json with a UTF-8 (or ASCII) charset, in any case, and other parameters that merely mention one', async () => {
    for (const contentType of [
      'Application/JSON; charset=utf-8',
      'application/json; Charset="UTF-8"',
      'application/json; charset=us-ascii',
      'application/json; profile="x;charset=latin1"',
    ]) {
      expect((await raw('/api/v1/evaluate', '{"facts":{}}', contentType)).statusCode, contentType).toBe(200);
    }
  });

  it('refuses a body that is not valid UTF-8 (Latin-1 sent unlabelled) with 400, and stores nothing', async () => {
    const before = (await json(t.app, 'GET', '/api/v1/rules?limit=1000')).json() as unknown[];
    const latin1 = Buffer.from(JSON.stringify(ruleDraft('caf\u00e9')), 'latin1');
    for (const contentType of ['application/json', 'application/json; charset=utf-8']) {
      const response = await t.app.inject({
        method: 'POST',
        url: '/api/v1/rules',
        payload: latin1,
        headers: { 'content-type': contentType },
      });
      expectError(response, 400, 'VALIDATION_ERROR', 'The request body is not valid UTF-8; JSON must be sent in UTF-8.');
    }
    expect((await json(t.app, 'GET', '/api/v1/rules?limit=1000')).json()).toEqual(before);
  });

  it.each([
    ['iso-8859-1', 'application/json; charset=iso-8859-1'],
    ['utf-16, quoted', 'application/json;charset="utf-16"'],
    ['windows-1252 after a malformed parameter', 'application/json;; foo; charset=windows-1252'],
  ])('refuses a body labelled %s with 415 rather than decode it as UTF-8, and stores nothing', async (_label, contentType) => {
    const before = (await json(t.app, 'GET', '/api/v1/rules?limit=1000')).json() as unknown[];
    const latin1 = Buffer.from(JSON.stringify(ruleDraft('caf\u00e9')), 'latin1');
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/v1/rules',
      payload: latin1,
      headers: { 'content-type': contentType },
    });
    expectError(response, 415, 'UNSUPPORTED_MEDIA_TYPE', /must be UTF-8 JSON; charset '(iso-8859-1|utf-16|windows-1252)' is not supported/);
    expect((await json(t.app, 'GET', '/api/v1/rules?limit=1000')).json()).toEqual(before);
  });

  it('answers invalid and unsafe regular expressions with DSL_ERROR', async () => {
    for (const pattern of ['([a-z]+', '(a+)+$', '[z-a]', '\\']) {
      const response = await json(
        t.app,
        'POST',
        '/api/v1/rules',
        ruleDraft('regex', { condition_dsl: { type: 'condition', field: 's', op: 'regex', value: pattern } }),
      );
      expectError(response, 400, 'DSL_ERROR', /root\.value/);
    }
    const replaced = await json(
      t.app,
      'PUT',
      `/api/v1/rules/${ruleId}`,
      ruleDraft('existing', { condition_dsl: { type: 'condition', field: 's', op: 'regex', value: '(a*)*' } }),
    );
    expectError(replaced, 400, 'DSL_ERROR');
  });

  it('answers unknown routes and methods with 404 NOT_FOUND', async () => {
    expectError(await json(t.app, 'GET', '/api/v1/nothing-here'), 404, 'NOT_FOUND', 'Route GET /api/v1/nothing-here does not exist.');
    expectError(await json(t.app, 'DELETE', '/api/v1/evaluate'), 404, 'NOT_FOUND');
    expectError(await json(t.app, 'GET', '/api/v2/evaluate'), 404, 'NOT_FOUND');
  });

  it('never answers random JSON bodies with a 5xx, on any route', async () => {
    const routes: [string, 'POST' | 'PUT' | 'PATCH'][] = [
      ['/api/v1/evaluate', 'POST'],
      ['/api/v1/evaluate/bulk', 'POST'],
      ['/api/v1/explain', 'POST'],
      ['/api/v1/simulate', 'POST'],
      ['/api/v1/validate', 'POST'],
      ['/api/v1/rules', 'POST'],
      [`/api/v1/rules/${ruleId}`, 'PUT'],
      [`/api/v1/rules/${ruleId}`, 'PATCH'],
      ['/api/v1/rulesets', 'POST'],
    ];
    const condition: fc.Arbitrary<unknown> = fc.letrec<{ node: unknown }>((tie) => ({
      node: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        fc.record({
          type: fc.constantFrom('condition', 'exists', 'weird'),
          field: fc.oneof(fc.string(), fc.constant('amount')),
          op: fc.constantFrom('>', 'regex', 'in', 'between', '=~'),
          value: fc.jsonValue({ maxDepth: 2 }),
        }),
        fc.record({ type: fc.constantFrom('and', 'or'), children: fc.array(tie('node'), { maxLength: 3 }) }),
        fc.record({ type: fc.constant('not'), child: tie('node') }),
        fc.jsonValue({ maxDepth: 2 }),
      ),
    })).node;
    const body = fc.oneof(
      fc.jsonValue(),
      fc.record({ facts: fc.jsonValue(), domain: fc.jsonValue({ maxDepth: 1 }) }, { requiredKeys: [] }),
      fc.record({ facts: fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 8 }) }),
      fc.record({ rule_id: fc.oneof(fc.integer(), fc.string()), facts: fc.jsonValue({ maxDepth: 2 }) }, { requiredKeys: [] }),
      fc.record({ condition_dsl: condition, rules: fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 3 }) }, { requiredKeys: [] }),
      fc.record(
        {
          name: fc.oneof(fc.constant('existing'), fc.string()),
          condition_dsl: condition,
          action: fc.jsonValue({ maxDepth: 1 }),
          priority: fc.oneof(fc.integer(), fc.double()),
          domain: fc.string(),
        },
        { requiredKeys: ['condition_dsl'] },
      ),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...routes), body, async ([url, method], payload) => {
        const revisionBefore = await t.store.rules.revision();
        const response = await json(t.app, method, url, payload);
        if (response.statusCode >= 400) {
          expect(response.statusCode).toBeLessThan(500);
          const parsed = response.json() as { detail: unknown; error_code: unknown };
          expect(typeof parsed.detail).toBe('string');
          expect(typeof parsed.error_code).toBe('string');
          // A refused body changes nothing.
          expect(await t.store.rules.revision()).toBe(revisionBefore);
        } else if (method !== 'POST' || url === '/api/v1/rules' || url === '/api/v1/rulesets') {
          // A random body can be a valid change (a PATCH of the priority, say): it becomes the new baseline.
          snapshot = { revision: await t.store.rules.revision(), rules: await t.store.rules.all() };
        }
      }),
      { numRuns: 300 },
    );
  });

  it('never answers random raw text with a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ maxLength: 200 }),
        fc.constantFrom('/api/v1/evaluate', '/api/v1/rules', '/api/v1/validate'),
        async (payload, url) => {
          const response = await raw(url, payload);
          expect(response.statusCode).toBeGreaterThanOrEqual(200);
          expect(response.statusCode).toBeLessThan(500);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('requests that are not valid HTTP, on a listening server', () => {
  let t: TestApp;
  let port: number;

  beforeAll(async () => {
    t = await startTestApp('pglite');
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as AddressInfo).port;
  });
  afterAll(() => t?.cleanup());

  /**
   * Sends raw bytes and reads everything the server writes until it closes the connection (the client never half-closes
   * it first: Node drops a request still being answered when its client does).
   */
  function sendRaw(bytes: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
      let answer = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk) => {
        answer += chunk;
      });
      socket.on('error', reject);
      socket.on('close', () => resolve(answer));
    });
  }

  /** The first reply to raw bytes: its status, its headers in lower case, and the rest. */
  async function send(bytes: string): Promise<{ status: number; headers: string; body: string }> {
    const [head = '', body = ''] = (await sendRaw(bytes)).split('\r\n\r\n');
    return { status: Number(head.split(' ')[1]), headers: head.toLowerCase(), body };
  }

  it.each([
    ['a header line without a colon', 'GET /health HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n'],
    [
      'both Content-Length and Transfer-Encoding',
      'POST /api/v1/evaluate HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}',
    ],
    ['an unknown method', 'FOO /health HTTP/1.1\r\nHost: x\r\n\r\n'],
  ])('answers %s with 400 VALIDATION_ERROR in the error shape', async (_, bytes) => {
    const answer = await send(bytes);
    expect(answer.status).toBe(400);
    expect(answer.headers).toContain('content-type: application/json');
    expect(JSON.parse(answer.body)).toEqual({ detail: 'The request is not valid HTTP/1.1.', error_code: 'VALIDATION_ERROR' });
  });

  it('answers headers over the size limit with 431 HEADERS_TOO_LARGE', async () => {
    const answer = await send(`GET /health HTTP/1.1\r\nHost: x\r\nX-Filler: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(answer.status).toBe(431);
    expect(JSON.parse(answer.body)).toEqual({
      detail: 'The request headers are larger than the server accepts.',
      error_code: 'HEADERS_TOO_LARGE',
    });
  });

  it('answers requests pipelined before a bad one with their own replies first, then the 400', async () => {
    const health = 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n';
    // Rules are created in turn: every one applied must be answered.
    const create = (name: string) => {
      const body = JSON.stringify(ruleDraft(name, { domain: 'pipelined' }));
      return `POST /api/v1/rules HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    };
    const names = ['p-1', 'p-2', 'p-3'].map((name) => `${name}-${randomUUID()}`);
    const connectRequest = 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n';
    for (const [before, last, status] of [
      [[health], 'GARBAGE\r\n\r\n', '400'],
      [names.slice(0, 2).map(create), 'GARBAGE\r\n\r\n', '400'],
      // CONNECT hands the socket over: the replies before it go first there too.
      [names.slice(2).map(create), connectRequest, '404'],
    ] as const) {
      const replies = (await sendRaw(`${before.join('')}${last}`)).split(/(?=HTTP\/1\.1 \d{3} )/);
      expect(replies.map((reply) => reply.slice(9, 12))).toEqual([
        ...before.map((request) => (request === health ? '200' : '201')),
        status,
      ]);
      expect(replies.at(-1)).toContain(
        status === '400' ? 'The request is not valid HTTP/1.1.' : 'Route CONNECT example.com:443 does not exist.',
      );
    }
    const listed = await t.app.inject({ method: 'GET', url: '/api/v1/rules?domain=pipelined' });
    expect(listed.json().map((rule: { name: string }) => rule.name)).toEqual(names);
  });

  it('closes a CONNECT connection once it is answered, even one its client keeps open', async () => {
    // allowHalfOpen: the client's side stays open after the reply, as a client that never closes would leave it.
    const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true }, () =>
      socket.write('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'),
    );
    let answer = '';
    socket.on('data', (chunk) => {
      answer += chunk.toString('utf8');
    });
    await new Promise<void>((resolve) => socket.once('end', () => resolve()));
    expect(answer).toMatch(/^HTTP\/1\.1 404 /);
    expect(answer).toContain('{"detail":"Route CONNECT example.com:443 does not exist.","error_code":"NOT_FOUND"}');
    // Handed over by Node, the socket is out of the server's timeouts: the server must let it go itself.
    const open = () =>
      new Promise<number>((resolve, reject) => t.app.server.getConnections((error, count) => (error ? reject(error) : resolve(count))));
    for (let waited = 0; waited < 3_000 && (await open()) > 0; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await open()).toBe(0);
    socket.destroy();
  });

  it('answers methods Node would answer by itself as routes that do not exist, in the error shape', async () => {
    for (const bytes of [
      'CONNECT /api/v1/rules HTTP/1.1\r\nHost: x\r\n\r\n',
      // Fastify asks a QUERY for its Content-Type first.
      'QUERY /api/v1/rules HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}',
    ]) {
      const answer = await send(bytes);
      expect(answer.status, bytes).toBe(404);
      expect(JSON.parse(answer.body), bytes).toEqual({
        detail: `Route ${bytes.split(' ', 1)[0]} /api/v1/rules does not exist.`,
        error_code: 'NOT_FOUND',
      });
    }
  });

  it('serves a request whose Expect it does not know as if it were absent, where Node answered a bare 417', async () => {
    const answer = await send('GET /health HTTP/1.1\r\nHost: x\r\nExpect: foo\r\nConnection: close\r\n\r\n');
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toMatchObject({ status: 'healthy' });
  });

  it('reads a Content-Length of zeros (00) as no body, as 0', async () => {
    const list = await send('GET /api/v1/rules?domain=none HTTP/1.1\r\nHost: x\r\nContent-Length: 00\r\nConnection: close\r\n\r\n');
    expect([list.status, list.body]).toEqual([200, '[]']);
    const removed = await send('DELETE /api/v1/rules/999 HTTP/1.1\r\nHost: x\r\nContent-Length: 00\r\nConnection: close\r\n\r\n');
    expect([removed.status, JSON.parse(removed.body)]).toEqual([404, { detail: 'Rule 999 does not exist.', error_code: 'RULE_NOT_FOUND' }]);
  });

  it('still serves a well-formed request after them', async () => {
    const answer = await send('GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(answer.status).toBe(200);
    expect(answer.body).toContain('"status":"healthy"');
  });
});

describe('a request whose body stops arriving', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp('pglite', { requestTimeoutMs: 1_000 });
    // Node finds a request late only once both of its timeouts have passed, at its next 30 s check.
    t.app.server.headersTimeout = 1_000;
    await t.app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await t?.cleanup();
  });

  it('is answered 408 REQUEST_TIMEOUT and its connection closed, as one whose headers stall', async () => {
    const { port } = t.app.server.address() as AddressInfo;
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (chunk) => {
      received += chunk.toString('utf8');
    });
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.write('POST /api/v1/evaluate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"fac');
    await closed;
    expect(received).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4))).toEqual({
      detail: 'The request was not received in full in time.',
      error_code: 'REQUEST_TIMEOUT',
    });
  }, 45_000);
});
