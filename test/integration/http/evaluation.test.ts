import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.ts';
import { newExecutionId } from '../../../src/evaluation/execution-id.ts';
import { RuleCatalog } from '../../../src/evaluation/rule-catalog.ts';
import { buildApp } from '../../../src/http/app.ts';
import { createLogger } from '../../../src/logger.ts';
import { countStoredExecutions } from '../../../src/store/execution-batches.ts';
import { openStore, type SqlStore } from '../../../src/store/open-store.ts';
import { createTestDatabase } from '../../helpers/databases.ts';
import { startTcpProxy, type TcpProxy } from '../../helpers/tcp-proxy.ts';
import { eq, gt, json, ruleDraft, STORE_KINDS, startTestApp, startTestAppOn, type TestApp } from './harness.ts';

async function countExecutions(t: TestApp): Promise<number> {
  return countStoredExecutions(t.store.db);
}

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe.each(STORE_KINDS)('evaluation over HTTP (%s)', (kind) => {
  let t: TestApp;
  const domain = `payments-${randomUUID()}`;
  let big: number;
  let vip: number;

  beforeAll(async () => {
    t = await startTestApp(kind);
    const created = await json(
      t.app,
      'POST',
      '/api/v1/rules',
      ruleDraft('big', { domain, condition_dsl: gt('amount', 1000), action: 'review' }),
    );
    big = created.json().id;
    const second = await json(
      t.app,
      'POST',
      '/api/v1/rules',
      ruleDraft('vip', { domain, condition_dsl: eq('tier', 'gold'), action: 'fast_track', priority: 10 }),
    );
    vip = second.json().id;
  });
  afterAll(() => t?.cleanup());

  it('evaluates a fact: fired rules by priority, their actions, latency, revision and a UUID v7 execution id', async () => {
    const response = await json(t.app, 'POST', '/api/v1/evaluate', { facts: { amount: 5000, tier: 'gold' }, domain });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body).toMatchObject({ fired_rules: [vip, big], actions: ['fast_track', 'review'], revision: t.catalog.revision });
    expect(body.execution_id).toMatch(UUID_V7);
    expect(body.latency_ms).toBeGreaterThanOrEqual(0);
  });

  it('fires nothing for a domain without rules', async () => {
    const response = await json(t.app, 'POST', '/api/v1/evaluate', { facts: { amount: 5000 }, domain: 'nobody' });
    expect(response.json()).toMatchObject({ fired_rules: [], actions: [] });
  });

  it('finds the execution right after the evaluate answered, before any flush', async () => {
    const facts = { amount: 2000, nested: { list: [1, 2] } };
    const evaluated = (await json(t.app, 'POST', '/api/v1/evaluate', { facts, domain })).json();
    const response = await json(t.app, 'GET', `/api/v1/executions/${evaluated.execution_id}`);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({
      execution_id: evaluated.execution_id,
      source: 'http',
      domain,
      facts,
      fired_rules: [big],
      actions: ['review'],
      latency_ms: evaluated.latency_ms,
      revision: evaluated.revision,
    });
    expect(Number.isNaN(Date.parse(response.json().created_at))).toBe(false);
  });

  it('records the facts of a body as the client formatted it, read back as the evaluation read them', async () => {
    const payload = `{\n  "domain": ${JSON.stringify(domain)},\n  "facts": { "amount": 1, "tier": "gold", "amount": 2500, "note": "caf\\u00e9 \\"quoted\\"" }\n}`;
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/v1/evaluate',
      headers: { 'content-type': 'application/json' },
      payload,
    });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    const evaluated = response.json();
    expect(evaluated).toMatchObject({ fired_rules: [vip, big], actions: ['fast_track', 'review'] });
    const facts = { amount: 2500, tier: 'gold', note: 'café "quoted"' };
    const pending = await json(t.app, 'GET', `/api/v1/executions/${evaluated.execution_id}`);
    expect(pending.json()).toMatchObject({ execution_id: evaluated.execution_id, domain, facts, fired_rules: [vip, big] });
    await t.store.executions.flush();
    const stored = await json(t.app, 'GET', `/api/v1/executions/${evaluated.execution_id}`);
    expect(stored.body).toBe(pending.body);
  });

  it('still finds the execution once it was written to the database, answering the same body', async () => {
    const evaluated = (await json(t.app, 'POST', '/api/v1/evaluate', { facts: { amount: 1 } })).json();
    const pending = await json(t.app, 'GET', `/api/v1/executions/${evaluated.execution_id}`);
    const upperCase = `/api/v1/executions/${String(evaluated.execution_id).toUpperCase()}`;
    expect((await json(t.app, 'GET', upperCase)).body).toBe(pending.body);
    await t.store.executions.flush();
    const response = await json(t.app, 'GET', `/api/v1/executions/${evaluated.execution_id}`);
    expect(response.json()).toMatchObject({ execution_id: evaluated.execution_id, domain: null, fired_rules: [] });
    expect(response.body).toBe(pending.body);
    // A UUID in upper case names the same execution, pending (above) or stored.
    expect((await json(t.app, 'GET', upperCase)).body).toBe(pending.body);
    expect(Object.keys(response.json())).toEqual([
      'execution_id',
      'source',
      'domain',
      'facts',
      'fired_rules',
      'actions',
      'latency_ms',
      'revision',
      'created_at',
    ]);
  });

  it('answers 404 NOT_FOUND for an execution never recorded and 400 for an id that is not a UUID', async () => {
    const missing = await json(t.app, 'GET', `/api/v1/executions/${randomUUID()}`);
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error_code).toBe('NOT_FOUND');
    const malformed = await json(t.app, 'GET', '/api/v1/executions/not-a-uuid');
    expect(malformed.statusCode).toBe(400);
    expect(malformed.json()).toEqual({ detail: 'path.id: id must be a UUID', error_code: 'VALIDATION_ERROR' });
  });

  it('evaluates a bulk request in input order, one execution per fact, all recorded as bulk', async () => {
    const facts = Array.from({ length: 300 }, (_, index) => ({ amount: index * 10, tier: index % 3 === 0 ? 'gold' : 'silver' }));
    const response = await json(t.app, 'POST', '/api/v1/evaluate/bulk', { facts, domain });
    expect(response.statusCode).toBe(200);
    const { results } = response.json() as { results: { execution_id: string; fired_rules: number[] }[] };
    expect(results).toHaveLength(300);
    results.forEach((result, index) => {
      const expected = [...(index % 3 === 0 ? [vip] : []), ...(index * 10 > 1000 ? [big] : [])];
      expect(result.fired_rules, `fact ${index}`).toEqual(expected);
    });
    expect(new Set(results.map((result) => result.execution_id)).size).toBe(300);
    const last = await json(t.app, 'GET', `/api/v1/executions/${results[299]!.execution_id}`);
    expect(last.json()).toMatchObject({ source: 'bulk', facts: facts[299] });
  });

  it('accepts an empty bulk request', async () => {
    const response = await json(t.app, 'POST', '/api/v1/evaluate/bulk', { facts: [] });
    expect(response.json()).toEqual({ results: [] });
  });

  it('explains a match and a miss', async () => {
    const matched = (await json(t.app, 'POST', '/api/v1/explain', { rule_id: big, facts: { amount: 1500 } })).json();
    expect(matched).toMatchObject({
      rule_id: big,
      rule_name: 'big',
      condition_dsl: gt('amount', 1000),
      matched: true,
      matching_conditions: ['amount > 1000'],
      failing_conditions: [],
      // The revision the explanation was made at, as results name theirs.
      revision: t.catalog.revision,
    });
    expect(t.catalog.revision).toBeGreaterThan(0);
    const missed = (await json(t.app, 'POST', '/api/v1/explain', { rule_id: big, facts: { amount: 10 } })).json();
    expect(missed).toMatchObject({ matched: false, matching_conditions: [], failing_conditions: ['amount > 1000 (actual: 10)'] });
    expect(typeof missed.explanation).toBe('string');
  });

  it('answers 404 RULE_NOT_FOUND when explaining an unknown rule', async () => {
    const response = await json(t.app, 'POST', '/api/v1/explain', { rule_id: 999_999, facts: {} });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({ detail: 'Rule 999999 does not exist.', error_code: 'RULE_NOT_FOUND' });
  });

  it('simulates inline rules with ids 1..n in input order, persisting and recording nothing', async () => {
    await t.store.executions.flush();
    const revision = await t.store.rules.revision();
    const before = await t.store.rules.all();
    const executions = await countExecutions(t);
    const response = await json(t.app, 'POST', '/api/v1/simulate', {
      rules: [
        { name: 'low', condition_dsl: gt('amount', 1), action: 'a' },
        { name: 'high', condition_dsl: gt('amount', 1), action: 'b', priority: 5 },
        { name: 'never', condition_dsl: gt('amount', 1e9), action: 'c' },
      ],
      facts: { amount: 10 },
    });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body).toMatchObject({ fired_rules: [2, 1], actions: ['b', 'a'], revision: null });
    expect(body).not.toHaveProperty('execution_id');
    expect(await t.store.rules.revision()).toBe(revision);
    expect(await t.store.rules.all()).toEqual(before);
    await t.store.executions.flush();
    expect(await countExecutions(t)).toBe(executions);
  });

  it('refuses inline rules whose regex patterns hold more than 2,000 characters in all, before running any', async () => {
    // Each pattern is within the 256-character limit of one rule (10 alternatives of 2 repeated 4 times, and x: 86);
    // together they pass the request's.
    const pattern = `(?:${Array.from({ length: 10 }, (_, i) => `p${i}`).join('|')}){4}x`;
    const regexRule = (i: number) => ruleDraft(`r${i}`, { condition_dsl: { type: 'condition', field: 's', op: 'regex', value: pattern } });
    const fits = Math.floor(2_000 / 86);
    const facts = { s: 'p1p2p3p4x' };
    const allowed = await json(t.app, 'POST', '/api/v1/simulate', { rules: Array.from({ length: fits }, (_, i) => regexRule(i)), facts });
    expect(allowed.statusCode).toBe(200);
    expect(allowed.json().fired_rules).toHaveLength(fits);
    const refused = await json(t.app, 'POST', '/api/v1/simulate', {
      rules: Array.from({ length: fits + 1 }, (_, i) => regexRule(i)),
      facts,
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toEqual({
      error_code: 'VALIDATION_ERROR',
      detail: expect.stringMatching(/regex patterns hold 2,064 characters in all .*one simulate request may carry at most 2,000/),
    });
  });

  it('refuses inline rules holding more than 64 any/all nodes in all, before running any', async () => {
    const scan = (i: number) => ({ type: 'any', field: 'items', condition: { type: 'condition', field: `b${i}`, op: '==', value: i } });
    const rule = (nodes: number) =>
      ruleDraft('scans', { condition_dsl: { type: 'or', children: Array.from({ length: nodes }, (_, i) => scan(i)) } });
    const facts = { items: [{ b63: 63 }] };
    const allowed = await json(t.app, 'POST', '/api/v1/simulate', { rules: [rule(32), rule(32)], facts });
    expect([allowed.statusCode, allowed.json().fired_rules]).toEqual([200, []]);
    const refused = await json(t.app, 'POST', '/api/v1/simulate', { rules: [rule(32), rule(33)], facts });
    expect(refused.json()).toEqual({
      error_code: 'VALIDATION_ERROR',
      detail: expect.stringMatching(/^The rules hold 65 any\/all nodes in all .*one simulate request may carry at most 64\.$/),
    });
  });

  it('simulates against the stored rules when no rules are given, recording no execution', async () => {
    await t.store.executions.flush();
    const before = await countExecutions(t);
    const response = await json(t.app, 'POST', '/api/v1/simulate', { facts: { amount: 5000, tier: 'gold' }, domain });
    expect(response.json()).toMatchObject({ fired_rules: [vip, big], actions: ['fast_track', 'review'], revision: t.catalog.revision });
    await t.store.executions.flush();
    expect(await countExecutions(t)).toBe(before);
  });

  it('answers DSL_ERROR naming the rule and path when an inline rule is invalid', async () => {
    const response = await json(t.app, 'POST', '/api/v1/simulate', {
      rules: [
        { name: 'ok', condition_dsl: gt('amount', 1), action: 'a' },
        { name: 'bad', condition_dsl: { type: 'condition', field: 'x', op: 'almost', value: 1 }, action: 'b' },
      ],
      facts: {},
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().error_code).toBe('DSL_ERROR');
    expect(response.json().detail).toContain('rules[1].condition_dsl.op');
  });

  it('validates a good and a bad DSL with 200', async () => {
    const good = await json(t.app, 'POST', '/api/v1/validate', { condition_dsl: { type: 'and', children: [gt('a', 1), eq('b', 'x')] } });
    expect(good.statusCode).toBe(200);
    expect(good.json()).toEqual({ valid: true, errors: [] });
    const bad = await json(t.app, 'POST', '/api/v1/validate', {
      condition_dsl: { type: 'and', children: [gt('a', 1), { type: 'condition', field: 'b', op: 'regex', value: '(a+)+$' }] },
    });
    expect(bad.statusCode).toBe(200);
    expect(bad.json().valid).toBe(false);
    expect(bad.json().errors).toEqual([{ path: 'root.children[1].value', message: expect.stringContaining('regular expression') }]);
  });

  it('validates a whole ruleset: per-rule problems with paths and duplicate names within a domain', async () => {
    const response = await json(t.app, 'POST', '/api/v1/validate', {
      rules: [
        ruleDraft('a'),
        ruleDraft('a', { domain: 'other' }),
        ruleDraft('a'),
        { name: 'b', action: 'x', condition_dsl: { type: 'or', children: [] } },
        { name: 'c', action: 'x', condition_dsl: gt('a', 1), colour: 'red' },
      ],
    });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({
      valid: false,
      errors: [
        { path: 'rules[2].name', message: 'duplicate name "a" in domain "default" (first at rules[0])' },
        { path: 'rules[3].condition_dsl.children', message: 'needs at least one child' },
        { path: 'rules[4]', message: expect.stringContaining('colour') },
      ],
    });
    const valid = await json(t.app, 'POST', '/api/v1/validate', { rules: [ruleDraft('a'), ruleDraft('b')] });
    expect(valid.json()).toEqual({ valid: true, errors: [] });
  });

  it('answers 400 when validate gets both or neither of condition_dsl and rules', async () => {
    for (const body of [{}, { condition_dsl: gt('a', 1), rules: [] }]) {
      const response = await json(t.app, 'POST', '/api/v1/validate', body);
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({ detail: 'body: send exactly one of condition_dsl or rules', error_code: 'VALIDATION_ERROR' });
    }
  });

  it('evaluates with the new revision as soon as a rule changes, and forgets a deleted rule', async () => {
    const scoped = `flip-${randomUUID()}`;
    const created = await json(t.app, 'POST', '/api/v1/rules', ruleDraft('flip', { domain: scoped, condition_dsl: gt('x', 10) }));
    const rule = created.json();
    const first = (await json(t.app, 'POST', '/api/v1/evaluate', { facts: { x: 5 }, domain: scoped })).json();
    expect(first).toMatchObject({ fired_rules: [] });
    expect(first.revision).toBe(await t.store.rules.revision());

    await json(t.app, 'PATCH', `/api/v1/rules/${rule.id}`, { condition_dsl: gt('x', 1) });
    const second = (await json(t.app, 'POST', '/api/v1/evaluate', { facts: { x: 5 }, domain: scoped })).json();
    expect(second.fired_rules).toEqual([rule.id]);
    expect(second.revision).toBe(first.revision + 1);

    await json(t.app, 'DELETE', `/api/v1/rules/${rule.id}`);
    const third = (await json(t.app, 'POST', '/api/v1/evaluate', { facts: { x: 5 }, domain: scoped })).json();
    expect(third.fired_rules).toEqual([]);
    expect(third.revision).toBe(second.revision + 1);
    const explain = await json(t.app, 'POST', '/api/v1/explain', { rule_id: rule.id, facts: {} });
    expect(explain.json().error_code).toBe('RULE_NOT_FOUND');
  });

  it('does not fire a disabled rule, and fires it again once enabled', async () => {
    const scoped = `toggle-${randomUUID()}`;
    const rule = (await json(t.app, 'POST', '/api/v1/rules', ruleDraft('t', { domain: scoped, enabled: false }))).json();
    expect((await json(t.app, 'POST', '/api/v1/evaluate', { facts: { amount: 500 }, domain: scoped })).json().fired_rules).toEqual([]);
    await json(t.app, 'PATCH', `/api/v1/rules/${rule.id}`, { enabled: true });
    expect((await json(t.app, 'POST', '/api/v1/evaluate', { facts: { amount: 500 }, domain: scoped })).json().fired_rules).toEqual([
      rule.id,
    ]);
  });

  it('accepts a fact array of 10,000 elements and refuses 10,001, in evaluate and session facts alike', async () => {
    const items = (length: number) => ({ items: Array.from({ length }, (_, i) => i) });
    expect((await json(t.app, 'POST', '/api/v1/evaluate', { facts: items(10_000) })).statusCode).toBe(200);
    const refusal = 'body.facts: must not hold an array of more than 10,000 elements';
    const refused = await json(t.app, 'POST', '/api/v1/evaluate', { facts: items(10_001) });
    expect([refused.statusCode, refused.json()]).toEqual([400, { detail: refusal, error_code: 'VALIDATION_ERROR' }]);
    const simulated = await json(t.app, 'POST', '/api/v1/simulate', { facts: { deep: [items(10_001)] } });
    expect([simulated.statusCode, simulated.json().detail]).toEqual([400, refusal]);
    const session = await json(t.app, 'POST', '/api/v1/sessions/rs-1-x/facts', { fact_id: 'f', event: items(10_001) });
    expect([session.statusCode, session.json().detail]).toEqual([400, 'body.event: must not hold an array of more than 10,000 elements']);
  });
});

describe('evaluation over HTTP while execution records cannot be written', () => {
  /** An app whose store reaches its own database through a proxy that can hold replies back, backlog limit 1,000. */
  async function behindProxy(
    logger = createLogger('silent'),
  ): Promise<{ app: FastifyInstance; store: SqlStore; proxy: TcpProxy; close(): Promise<void> }> {
    const database = await createTestDatabase();
    const proxy = await startTcpProxy(database.url);
    const store = await openStore({ databaseUrl: proxy.url, dataDir: '', executionFlushMs: 20 });
    const catalog = await RuleCatalog.open({ rules: store.rules });
    const app = await buildApp({
      config: loadConfig({ RULES_EXECUTION_BACKLOG_MAX: '1000' }).http,
      version: '0.0.0-test',
      store,
      catalog,
      logger,
    });
    return {
      app,
      store,
      proxy,
      async close() {
        await app.close();
        await store.close().catch(() => undefined);
        proxy.close();
        await database.drop();
      },
    };
  }

  /** Waits until every pending record is written (the database answers again). */
  async function drained(store: SqlStore): Promise<void> {
    const deadline = Date.now() + 30_000;
    while (store.executions.pendingCount() > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
  }

  it('refuses requests that record one more (503, readiness down) past RULES_EXECUTION_BACKLOG_MAX, and serves again once written', {
    timeout: 60_000,
  }, async () => {
    const { app, store, proxy, close } = await behindProxy();
    try {
      // The database goes slow: the writer's insert waits, and records pile up behind it.
      proxy.delayReplies(3_000);
      expect((await json(app, 'POST', '/api/v1/evaluate', { facts: { a: 1 } })).statusCode).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 100));
      const bulk = await json(app, 'POST', '/api/v1/evaluate/bulk', { facts: Array.from({ length: 1_000 }, (_, i) => ({ i })) });
      expect(bulk.statusCode).toBe(200);
      const refused = await json(app, 'POST', '/api/v1/evaluate', { facts: { a: 2 } });
      expect(refused.statusCode).toBe(503);
      expect(refused.json()).toEqual({
        detail: expect.stringMatching(/^Execution records are not being written \(\d+ waiting, \d+ bytes; /),
        error_code: 'UNAVAILABLE',
      });
      expect((await json(app, 'POST', '/api/v1/evaluate/bulk', { facts: [{}] })).statusCode).toBe(503);
      const ready = await json(app, 'GET', '/health/ready');
      expect(ready.statusCode).toBe(503);
      expect(ready.json().checks.executions).toBe('down');
      // The database answers again: the backlog is written, every answered record is there, requests are served.
      proxy.delayReplies(0);
      await drained(store);
      expect((await json(app, 'POST', '/api/v1/evaluate', { facts: { a: 3 } })).statusCode).toBe(200);
      await store.executions.flush();
      expect(await countStoredExecutions(store.db)).toBe(1 + 1_000 + 1);
    } finally {
      await close();
    }
  });

  it('lets concurrent bulk requests pass the limit by one request at most: each counts what it will record', {
    timeout: 60_000,
  }, async () => {
    const { app, store, proxy, close } = await behindProxy();
    try {
      proxy.delayReplies(3_000);
      // Six bulks of 600 at once: each yields between slices, so all would pass a check of the backlog alone.
      const facts = Array.from({ length: 600 }, (_, i) => ({ i }));
      const answers = await Promise.all(Array.from({ length: 6 }, () => json(app, 'POST', '/api/v1/evaluate/bulk', { facts })));
      const accepted = answers.filter((answer) => answer.statusCode === 200).length;
      const refused = answers.filter((answer) => answer.statusCode === 503);
      expect(accepted + refused.length).toBe(6);
      expect(accepted * 600).toBeLessThanOrEqual(1_000 + 600);
      expect(refused[0]?.json()).toEqual({
        detail: expect.stringMatching(
          /^(Execution records are not being written \(\d+ waiting, \d+ bytes(, \d+ more from bulk requests under way)?; |Bulk requests under way will record \d+ executions, which with those waiting to be written \(\d+ waiting, \d+ bytes\) pass RULES_EXECUTION_BACKLOG_MAX; try again shortly\.$)/,
        ),
        error_code: 'UNAVAILABLE',
      });
      expect(store.executions.pendingCount()).toBe(accepted * 600);
      // Once the bulks have answered, nothing counts as under way: the database back, requests are served again.
      proxy.delayReplies(0);
      await drained(store);
      expect((await json(app, 'POST', '/api/v1/evaluate/bulk', { facts: [{}] })).statusCode).toBe(200);
    } finally {
      await close();
    }
  });

  it("logs a request the database could not serve as a warning naming the database's own error", async () => {
    const logs: Record<string, unknown>[] = [];
    const { app, proxy, close } = await behindProxy(createLogger('info', { write: (line: string) => void logs.push(JSON.parse(line)) }));
    try {
      proxy.close();
      // The first request may meet its pooled connection dropped; the next must open one, which is refused.
      for (let i = 0; i < 3; i += 1) expect((await json(app, 'GET', '/api/v1/rules')).statusCode).toBe(503);
      const refusals = logs.filter((line) => line.msg === 'request refused');
      expect(refusals).toHaveLength(3);
      for (const entry of refusals) expect(entry).toMatchObject({ level: 'warn', error_code: 'UNAVAILABLE', cause: expect.any(String) });
      // Wrapped twice (the store's "could not connect", then UNAVAILABLE): the database's own words are still there.
      expect(refusals.at(-1)?.cause).toMatch(/^could not connect to the database: .*ECONNREFUSED/);
      expect(refusals.some((entry) => entry.err !== undefined)).toBe(false);
    } finally {
      await close();
    }
  });

  it('counts large records by their bytes: a few of them reach the limit that many small ones would', { timeout: 60_000 }, async () => {
    const { app, store, proxy, close } = await behindProxy();
    try {
      proxy.delayReplies(3_000);
      // 1,000 records' worth is 512,000 bytes: six facts of 100 KB pass it, where six small ones are nowhere near.
      const large = { note: 'x'.repeat(100_000) };
      const answers: number[] = [];
      for (let i = 0; i < 8; i += 1) answers.push((await json(app, 'POST', '/api/v1/evaluate', { facts: { ...large, i } })).statusCode);
      expect(answers.slice(0, 5)).toEqual([200, 200, 200, 200, 200]);
      expect(answers.slice(6)).toEqual([503, 503]);
      const ready = await json(app, 'GET', '/health/ready');
      expect(ready.statusCode).toBe(503);
      expect(ready.json().details.executions).toEqual({
        pending: answers.filter((status) => status === 200).length,
        pending_bytes: expect.any(Number),
      });
      expect(ready.json().details.executions.pending_bytes).toBeGreaterThan(512_000);
      proxy.delayReplies(0);
      await drained(store);
      expect(store.executions.pendingBytes()).toBe(0);
      expect((await json(app, 'POST', '/api/v1/evaluate', { facts: large })).statusCode).toBe(200);
    } finally {
      await close();
    }
  });
});

describe('an execution read through another instance on the same PostgreSQL database', () => {
  it('is found by a GET right after the evaluate answered, while a fresh id never recorded is still 404', async () => {
    const database = await createTestDatabase();
    // The evaluating instance writes its batches only every 250 ms: a GET elsewhere comes before that write.
    const writer = await openStore({ databaseUrl: database.url, dataDir: '', executionFlushMs: 250 });
    const reader = await openStore({ databaseUrl: database.url, dataDir: '' });
    const first = await startTestAppOn(writer, () => writer.close());
    const second = await startTestAppOn(reader, () => reader.close());
    try {
      const evaluated = (await json(first.app, 'POST', '/api/v1/evaluate', { facts: { amount: 5 } })).json();
      const read = await json(second.app, 'GET', `/api/v1/executions/${evaluated.execution_id}`);
      expect(read.statusCode).toBe(200);
      expect(read.json()).toMatchObject({ execution_id: evaluated.execution_id, source: 'http', facts: { amount: 5 } });
      const fresh = newExecutionId();
      const missing = await json(second.app, 'GET', `/api/v1/executions/${fresh}`);
      expect(missing.statusCode).toBe(404);
      expect(missing.json()).toEqual({ detail: `Execution ${fresh} does not exist or has expired.`, error_code: 'NOT_FOUND' });
    } finally {
      await first.cleanup();
      await second.cleanup();
      await database.drop();
    }
  });
});
