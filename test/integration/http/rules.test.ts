import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ruleVersionSchema } from '../../../src/http/schemas/rules.ts';
import { eq, gt, json, ruleDraft, STORE_KINDS, startTestApp, type TestApp } from './harness.ts';

/** Follows Link rel="next" headers from the first URL; returns every page's ids. */
async function walkPages(t: TestApp, url: string): Promise<{ pages: number[][]; links: string[] }> {
  const pages: number[][] = [];
  const links: string[] = [];
  let next: string | undefined = url;
  while (next !== undefined) {
    const response = await json(t.app, 'GET', next);
    expect(response.statusCode).toBe(200);
    pages.push((response.json() as { id: number }[]).map((item) => item.id));
    const link = response.headers.link as string | undefined;
    if (link !== undefined) links.push(link);
    next = link === undefined ? undefined : /^<([^>]+)>; rel="next"$/.exec(link)![1];
  }
  return { pages, links };
}

describe.each(STORE_KINDS)('rules, rulesets and audit over HTTP (%s)', (kind) => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp(kind);
  });
  afterAll(() => t?.cleanup());

  it('creates a rule: 201, version 1, timestamps, defaults and a Location header', async () => {
    const revision = t.catalog.revision;
    const response = await json(t.app, 'POST', '/api/v1/rules', {
      name: 'high value',
      condition_dsl: gt('amount', 1000),
      action: 'review',
      tags: ['risk'],
      description: 'Large payments get a second look.',
    });
    expect(response.statusCode).toBe(201);
    const rule = response.json();
    expect(rule).toMatchObject({
      name: 'high value',
      domain: 'default',
      condition_dsl: gt('amount', 1000),
      action: 'review',
      priority: 0,
      enabled: true,
      tags: ['risk'],
      description: 'Large payments get a second look.',
      version: 1,
    });
    expect(rule.created_at).toBe(rule.updated_at);
    expect(response.headers.location).toBe(`/api/v1/rules/${rule.id}`);
    expect(t.catalog.revision).toBeGreaterThan(revision);
    expect((await json(t.app, 'GET', `/api/v1/rules/${rule.id}`)).json()).toEqual(rule);
  });

  it('answers 409 CONFLICT for a name already used in the same domain, and allows it in another', async () => {
    const domain = `d-${randomUUID()}`;
    expect((await json(t.app, 'POST', '/api/v1/rules', ruleDraft('twin', { domain }))).statusCode).toBe(201);
    const clash = await json(t.app, 'POST', '/api/v1/rules', ruleDraft('twin', { domain }));
    expect(clash.statusCode).toBe(409);
    expect(clash.json().error_code).toBe('CONFLICT');
    expect((await json(t.app, 'POST', '/api/v1/rules', ruleDraft('twin', { domain: `${domain}-2` }))).statusCode).toBe(201);
  });

  it('answers 400 DSL_ERROR listing the path of every problem, and stores nothing', async () => {
    const revision = await t.store.rules.revision();
    const response = await json(t.app, 'POST', '/api/v1/rules', {
      name: 'broken',
      action: 'x',
      condition_dsl: {
        type: 'and',
        children: [
          { type: 'condition', field: 'a', op: 'nope', value: 1 },
          { type: 'condition', field: 'b', op: 'regex', value: '([a-z]+)*$' },
          { type: 'or' },
        ],
      },
    });
    expect(response.statusCode).toBe(400);
    const body = response.json();
    expect(body.error_code).toBe('DSL_ERROR');
    expect(body.detail).toContain('root.children[0].op');
    expect(body.detail).toContain('root.children[1].value');
    expect(body.detail).toContain('root.children[2]');
    expect(await t.store.rules.revision()).toBe(revision);
  });

  it('replaces a rule with PUT (version + 1, omitted fields back to defaults) and patches with PATCH', async () => {
    const created = (await json(t.app, 'POST', '/api/v1/rules', ruleDraft(`r-${randomUUID()}`, { priority: 7, tags: ['x'] }))).json();
    const replaced = await json(t.app, 'PUT', `/api/v1/rules/${created.id}`, {
      name: created.name,
      condition_dsl: eq('tier', 'gold'),
      action: 'gold',
    });
    expect(replaced.statusCode).toBe(200);
    expect(replaced.json()).toMatchObject({ id: created.id, version: 2, priority: 0, condition_dsl: eq('tier', 'gold'), action: 'gold' });
    expect(replaced.json().created_at).toBe(created.created_at);

    const patched = await json(t.app, 'PATCH', `/api/v1/rules/${created.id}`, { priority: 3 });
    expect(patched.json()).toMatchObject({ version: 3, priority: 3, action: 'gold', condition_dsl: eq('tier', 'gold') });

    const badPatch = await json(t.app, 'PATCH', `/api/v1/rules/${created.id}`, { condition_dsl: { type: 'not' } });
    expect(badPatch.statusCode).toBe(400);
    expect(badPatch.json().error_code).toBe('DSL_ERROR');
    const emptyPatch = await json(t.app, 'PATCH', `/api/v1/rules/${created.id}`, {});
    expect(emptyPatch.json()).toEqual({ detail: 'body: send at least one field to change', error_code: 'VALIDATION_ERROR' });
    expect((await json(t.app, 'GET', `/api/v1/rules/${created.id}`)).json().version).toBe(3);
  });

  it('tags each rule version (ETag) and refuses a change made against another one (If-Match) with 412, changing nothing', async () => {
    const created = await json(t.app, 'POST', '/api/v1/rules', ruleDraft(`etag-${randomUUID()}`));
    expect(created.headers.etag).toBe('"1"');
    const id = created.json().id as number;
    expect((await json(t.app, 'GET', `/api/v1/rules/${id}`)).headers.etag).toBe('"1"');

    // Two editors read version 1; the first one's change wins, the second one is told instead of overwriting it.
    const first = await json(t.app, 'PATCH', `/api/v1/rules/${id}`, { priority: 5 }, { 'if-match': '"1"' });
    expect(first.statusCode).toBe(200);
    expect(first.headers.etag).toBe('"2"');
    const second = await json(t.app, 'PUT', `/api/v1/rules/${id}`, ruleDraft('overwrite'), { 'if-match': '"1"' });
    expect(second.statusCode).toBe(412);
    expect(second.json()).toEqual({
      detail: `rule ${id} is at version 2, and If-Match names version 1: read it again and reapply the change`,
      error_code: 'PRECONDITION_FAILED',
    });
    expect((await json(t.app, 'GET', `/api/v1/rules/${id}`)).json()).toMatchObject({ version: 2, priority: 5 });

    // A weak tag never matches, nor another spelling of the number; several tags, or *, do.
    expect((await json(t.app, 'PATCH', `/api/v1/rules/${id}`, { priority: 6 }, { 'if-match': 'W/"2"' })).statusCode).toBe(412);
    expect((await json(t.app, 'PATCH', `/api/v1/rules/${id}`, { priority: 6 }, { 'if-match': '"02"' })).statusCode).toBe(412);
    expect((await json(t.app, 'PATCH', `/api/v1/rules/${id}`, { priority: 6 }, { 'if-match': '"1", "2"' })).statusCode).toBe(200);
    expect((await json(t.app, 'PATCH', `/api/v1/rules/${id}`, { priority: 7 }, { 'if-match': '*' })).headers.etag).toBe('"4"');
    expect((await json(t.app, 'DELETE', `/api/v1/rules/${id}`, undefined, { 'if-match': '"3"' })).statusCode).toBe(412);
    expect((await json(t.app, 'DELETE', `/api/v1/rules/${id}`, undefined, { 'if-match': '"4"' })).statusCode).toBe(204);
    const versions = (await json(t.app, 'GET', `/api/v1/rules/${id}/versions`)).json() as { change: string }[];
    expect(versions.map((version) => version.change)).toEqual(['create', 'update', 'update', 'update', 'delete']);

    // The OpenAPI document says so: the ETag of answers carrying a rule, the If-Match of the changes.
    const document = (await json(t.app, 'GET', '/openapi.json')).json();
    const one = document.paths['/api/v1/rules/{id}'];
    expect(Object.keys(one.get.responses['200'].headers)).toEqual(['etag']);
    expect(Object.keys(document.paths['/api/v1/rules'].post.responses['201'].headers)).toEqual(['etag', 'location']);
    // And the headers other routes send: Location on every creation, Link on the paged lists, WWW-Authenticate on a 401.
    expect(Object.keys(document.paths['/api/v1/rulesets'].post.responses['201'].headers)).toEqual(['location']);
    expect(Object.keys(document.paths['/api/v1/sessions'].post.responses['201'].headers)).toEqual(['location']);
    for (const list of ['/api/v1/rules', '/api/v1/rulesets', '/api/v1/audit']) {
      expect(Object.keys(document.paths[list].get.responses['200'].headers), list).toEqual(['link']);
    }
    expect(document.paths['/api/v1/rules/{id}/versions'].get.responses['200'].headers).toBeUndefined();
    expect(Object.keys(document.paths['/api/v1/evaluate'].post.responses['401'].headers)).toEqual(['www-authenticate']);
    for (const method of ['put', 'patch', 'delete']) {
      expect(one[method].parameters.filter((parameter: { in: string }) => parameter.in === 'header')).toEqual([
        expect.objectContaining({ in: 'header', name: 'if-match', required: false }),
      ]);
      expect(Object.keys(one[method].responses)).toContain('412');
    }
  });

  it('deletes a rule for a client that labels its empty DELETE as JSON, and still refuses an empty body where one is needed', async () => {
    const created = (await json(t.app, 'POST', '/api/v1/rules', ruleDraft(`labelled-${randomUUID()}`))).json();
    const headers = { 'content-type': 'application/json', 'content-length': '0' };
    const deleted = await t.app.inject({ method: 'DELETE', url: `/api/v1/rules/${created.id}`, headers, payload: '' });
    expect(deleted.statusCode).toBe(204);
    expect((await json(t.app, 'GET', `/api/v1/rules/${created.id}`)).statusCode).toBe(404);
    const empty = await t.app.inject({ method: 'POST', url: '/api/v1/rules', headers, payload: '' });
    expect(empty.statusCode).toBe(400);
    expect(empty.json()).toEqual({ detail: 'The request body is empty; send a JSON object.', error_code: 'VALIDATION_ERROR' });
  });

  it('answers a rule, on every route and in its versions, with its fields and condition keys in the documented order', async () => {
    const condition = {
      type: 'and',
      children: [
        { type: 'condition', field: 'amount', op: '>', value: 5000 },
        { type: 'not', child: { type: 'exists', field: 'vip' } },
        { type: 'any', field: 'items', condition: { type: 'condition', field: 'sku', op: 'in', value: ['a', 'b'] } },
      ],
    };
    const written = JSON.stringify(condition);
    const created = await json(t.app, 'POST', '/api/v1/rules', ruleDraft(`ordered-${randomUUID()}`, { condition_dsl: condition }));
    const id = created.json().id;
    const fields = [
      'id',
      'name',
      'domain',
      'condition_dsl',
      'action',
      'priority',
      'enabled',
      'tags',
      'version',
      'created_at',
      'updated_at',
    ];
    for (const response of [
      created,
      await json(t.app, 'GET', `/api/v1/rules/${id}`),
      await json(t.app, 'PATCH', `/api/v1/rules/${id}`, { priority: 3 }),
    ]) {
      expect(Object.keys(response.json())).toEqual(fields);
      expect(JSON.stringify(response.json().condition_dsl)).toBe(written);
    }
    const versions = (await json(t.app, 'GET', `/api/v1/rules/${id}/versions`)).json() as { rule: Record<string, unknown> }[];
    for (const version of versions) {
      expect(Object.keys(version.rule)).toEqual(fields);
      expect(JSON.stringify(version.rule.condition_dsl)).toBe(written);
    }
  });

  it('lists every version of a rule, oldest first, also after it was deleted', async () => {
    const created = (await json(t.app, 'POST', '/api/v1/rules', ruleDraft(`v-${randomUUID()}`))).json();
    await json(t.app, 'PATCH', `/api/v1/rules/${created.id}`, { action: 'second' });
    const deleted = await json(t.app, 'DELETE', `/api/v1/rules/${created.id}`);
    expect(deleted.statusCode).toBe(204);
    expect(deleted.body).toBe('');
    const versions = await json(t.app, 'GET', `/api/v1/rules/${created.id}/versions`);
    expect(versions.statusCode).toBe(200);
    const list = versions.json() as { version: number; rule: { action: string }; actor: string }[];
    expect(list.slice(0, 2).map((v) => [v.version, v.rule.action, v.actor])).toEqual([
      [1, created.action, 'anonymous'],
      [2, 'second', 'anonymous'],
    ]);
    expect((await json(t.app, 'GET', `/api/v1/rules/${created.id}`)).json().error_code).toBe('RULE_NOT_FOUND');
    // Every field the reply carries is one the published schema declares.
    for (const version of list) expect(ruleVersionSchema.strict().safeParse(version).success, JSON.stringify(version)).toBe(true);
    expect(list.map((v) => (v as { change?: string }).change)).toEqual(['create', 'update', 'delete']);
  });

  it('answers 404 RULE_NOT_FOUND for every operation on an unknown rule, and 400 for a malformed id', async () => {
    const id = 2_000_000_000;
    const calls = [
      json(t.app, 'GET', `/api/v1/rules/${id}`),
      json(t.app, 'PUT', `/api/v1/rules/${id}`, ruleDraft('ghost')),
      json(t.app, 'PATCH', `/api/v1/rules/${id}`, { priority: 1 }),
      json(t.app, 'DELETE', `/api/v1/rules/${id}`),
      json(t.app, 'GET', `/api/v1/rules/${id}/versions`),
    ];
    for (const response of await Promise.all(calls)) {
      expect(response.statusCode).toBe(404);
      expect(response.json()).toEqual({ detail: `Rule ${id} does not exist.`, error_code: 'RULE_NOT_FOUND' });
    }
    for (const bad of ['abc', '0', '-1', '1.5', '99999999999']) {
      const response = await json(t.app, 'GET', `/api/v1/rules/${bad}`);
      expect(response.statusCode, bad).toBe(400);
      expect(response.json().error_code).toBe('VALIDATION_ERROR');
    }
  });

  it('pages through rules with limit and Link headers, keeping the filters', async () => {
    const domain = `paged-${randomUUID()}`;
    const ids: number[] = [];
    for (let index = 0; index < 5; index++) {
      const tags = index % 2 === 0 ? ['even'] : ['odd'];
      ids.push((await json(t.app, 'POST', '/api/v1/rules', ruleDraft(`p${index}`, { domain, tags, enabled: index !== 4 }))).json().id);
    }
    const all = await walkPages(t, `/api/v1/rules?domain=${domain}&limit=2`);
    expect(all.pages).toEqual([ids.slice(0, 2), ids.slice(2, 4), ids.slice(4)]);
    expect(all.links[0]).toMatch(new RegExp(`^</api/v1/rules\\?domain=${domain}&limit=2&cursor=[^>]+>; rel="next"$`));

    expect((await walkPages(t, `/api/v1/rules?domain=${domain}&tag=even`)).pages).toEqual([[ids[0], ids[2], ids[4]]]);
    expect((await walkPages(t, `/api/v1/rules?domain=${domain}&enabled=false`)).pages).toEqual([[ids[4]]]);
    expect((await walkPages(t, `/api/v1/rules?domain=${domain}&enabled=true&tag=odd&limit=1`)).pages).toEqual([[ids[1]], [ids[3]]]);
    const exact = await json(t.app, 'GET', `/api/v1/rules?domain=${domain}&limit=5`);
    expect(exact.headers.link).toBeUndefined();

    // A cursor pages only the list that issued it, and one written by hand pages nothing.
    const cursor = new URL(all.links[0]!.slice(1, all.links[0]!.indexOf('>')), 'http://x').searchParams.get('cursor');
    for (const url of [
      `/api/v1/audit?cursor=${cursor}`,
      `/api/v1/rulesets?cursor=${cursor}`,
      '/api/v1/rules?cursor=OTk5OTk5OTk5OTk5OTk5',
    ]) {
      const response = await json(t.app, 'GET', url);
      expect(response.statusCode, url).toBe(400);
      expect(response.json().detail, url).toMatch(/cursor is malformed/);
    }
  });

  it('rejects bad listing parameters with 400', async () => {
    for (const query of ['limit=0', 'limit=1001', 'limit=ten', 'enabled=yes', 'cursor=%%%', 'cursor=bm90LWEtY3Vyc29y', 'colour=red']) {
      const response = await json(t.app, 'GET', `/api/v1/rules?${query}`);
      expect(response.statusCode, query).toBe(400);
      expect(response.json().error_code, query).toBe('VALIDATION_ERROR');
    }
  });

  it('creates, reads and lists rulesets with their rule count and the current revision', async () => {
    const domain = `rs-${randomUUID()}`;
    await json(t.app, 'POST', '/api/v1/rules', ruleDraft('one', { domain }));
    await json(t.app, 'POST', '/api/v1/rules', ruleDraft('two', { domain, enabled: false }));
    const created = await json(t.app, 'POST', '/api/v1/rulesets', { name: `set-${domain}`, domain, description: 'Payments rules' });
    expect(created.statusCode).toBe(201);
    const ruleset = created.json();
    expect(ruleset).toMatchObject({
      name: `set-${domain}`,
      domain,
      description: 'Payments rules',
      rule_count: 2,
      revision: t.catalog.revision,
    });
    // In the documented (and OpenAPI) field order.
    expect(Object.keys(ruleset)).toEqual(['id', 'name', 'domain', 'description', 'rule_count', 'revision', 'created_at', 'updated_at']);
    expect(created.headers.location).toBe(`/api/v1/rulesets/${ruleset.id}`);

    await json(t.app, 'POST', '/api/v1/rules', ruleDraft('three', { domain }));
    const read = (await json(t.app, 'GET', `/api/v1/rulesets/${ruleset.id}`)).json();
    expect(read).toMatchObject({ id: ruleset.id, rule_count: 3, revision: t.catalog.revision });

    const clash = await json(t.app, 'POST', '/api/v1/rulesets', { name: `set-${domain}`, domain: 'elsewhere' });
    expect(clash.statusCode).toBe(409);
    expect(clash.json().error_code).toBe('CONFLICT');

    const second = (await json(t.app, 'POST', '/api/v1/rulesets', { name: `set2-${domain}`, domain })).json();
    const pages = await walkPages(t, '/api/v1/rulesets?limit=1');
    expect(pages.pages.flat()).toEqual(expect.arrayContaining([ruleset.id, second.id]));
    expect(pages.pages.every((page) => page.length === 1)).toBe(true);
  });

  it('answers 404 NOT_FOUND for an unknown ruleset and 400 for a ruleset without a domain', async () => {
    const missing = await json(t.app, 'GET', '/api/v1/rulesets/2000000000');
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual({ detail: 'Ruleset 2000000000 does not exist.', error_code: 'NOT_FOUND' });
    const invalid = await json(t.app, 'POST', '/api/v1/rulesets', { name: 'x' });
    expect(invalid.statusCode).toBe(400);
    expect(invalid.json().error_code).toBe('VALIDATION_ERROR');
  });

  it('keeps an audit trail: newest first, filtered by entity, action and time, paged, and verifiable', async () => {
    const since = new Date(Date.now() - 1).toISOString();
    const rule = (await json(t.app, 'POST', '/api/v1/rules', ruleDraft(`audited-${randomUUID()}`))).json();
    await json(t.app, 'PATCH', `/api/v1/rules/${rule.id}`, { priority: 2 });
    await json(t.app, 'DELETE', `/api/v1/rules/${rule.id}`);

    const entries = (await json(t.app, 'GET', `/api/v1/audit?entity_type=rule&entity_id=${rule.id}`)).json() as {
      action: string;
      actor: string;
      before: unknown;
      after: unknown;
      hash: string;
      prev_hash: string;
    }[];
    expect(entries.map((entry) => entry.action)).toEqual(['delete', 'update', 'create']);
    expect(entries.every((entry) => entry.actor === 'anonymous')).toBe(true);
    expect(entries[2]!.before).toBeNull();
    expect(entries[0]!.after).toBeNull();
    expect(entries[0]!.prev_hash).toBe(entries[1]!.hash);

    const updates = (await json(t.app, 'GET', `/api/v1/audit?entity_id=${rule.id}&action=update`)).json();
    expect(updates).toHaveLength(1);
    const recent = (await json(t.app, 'GET', `/api/v1/audit?since=${encodeURIComponent(since)}&entity_type=rule`)).json();
    expect(recent.length).toBeGreaterThanOrEqual(3);
    const none = (await json(t.app, 'GET', `/api/v1/audit?until=${encodeURIComponent('2000-01-01T00:00:00Z')}`)).json();
    expect(none).toEqual([]);
    // Instants finer than a millisecond keep their side of an entry's `at`: since is at-or-after, until before.
    const created = entries[2] as unknown as { id: number; at: string };
    const finer = (digits: string) => encodeURIComponent(created.at.replace('Z', `${digits}Z`));
    const ids = async (query: string) =>
      ((await json(t.app, 'GET', `/api/v1/audit?entity_id=${rule.id}&action=create&${query}`)).json() as { id: number }[]).map(
        (entry) => entry.id,
      );
    expect(await ids(`until=${finer('1')}`)).toEqual([created.id]);
    expect(await ids(`until=${finer('999')}`)).toEqual([created.id]);
    expect(await ids(`until=${finer('000')}`)).toEqual([]);
    expect(await ids(`since=${finer('5')}`)).toEqual([]);
    expect(await ids(`since=${finer('000')}`)).toEqual([created.id]);

    const paged = await walkPages(t, `/api/v1/audit?entity_id=${rule.id}&limit=2`);
    expect(paged.pages.map((page) => page.length)).toEqual([2, 1]);
    expect(paged.pages[0]![0]).toBeGreaterThan(paged.pages[1]![0]!);

    const verified = await json(t.app, 'GET', '/api/v1/audit/verify');
    expect(verified.json()).toMatchObject({ valid: true });
    expect(verified.json().entries).toBeGreaterThanOrEqual(3);
  });

  it('rejects bad audit filters with 400', async () => {
    for (const query of ['entity_type=user', 'action=read', 'since=yesterday', 'entity_id=x', 'until=2025-13-01T00:00:00Z']) {
      const response = await json(t.app, 'GET', `/api/v1/audit?${query}`);
      expect(response.statusCode, query).toBe(400);
      expect(response.json().error_code, query).toBe('VALIDATION_ERROR');
    }
  });
});
