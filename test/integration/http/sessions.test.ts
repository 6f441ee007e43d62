import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/logger.ts';
import { MemorySessionStore } from '../../../src/sessions/memory-session-store.ts';
import { openRedisSessionStore } from '../../../src/sessions/redis-session-store.ts';
import type { SessionStore } from '../../../src/sessions/session-store.ts';
import { useStackResources } from '../../helpers/stack.ts';
import { eq, gt, json, startTestApp, type TestApp } from './harness.ts';

const resources = useStackResources();

const STORES: { name: string; open: () => Promise<SessionStore> }[] = [
  { name: 'Redis', open: () => openRedisSessionStore({ url: resources.redisUrl, keyPrefix: resources.keyPrefix('http-sessions') }) },
  { name: 'in-process', open: async () => new MemorySessionStore() },
];

const failedLogin = eq('type', 'login_failed');
const count = (extra: Record<string, unknown>) => ({ type: 'accumulate', function: 'count', op: '>=', value: 1, ...extra });
const sum = (field: string, extra: Record<string, unknown>) => ({
  type: 'accumulate',
  function: 'sum',
  field,
  op: '>',
  value: 0,
  ...extra,
});

interface RuleSpec {
  name: string;
  condition_dsl: unknown;
  priority?: number;
  enabled?: boolean;
}

describe('session routes and API keys', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp('pglite', { env: { RULES_API_KEYS: 'ev=key-ev:evaluate' } });
  });
  afterAll(() => t?.cleanup());

  it('need a key with scope evaluate', async () => {
    const anonymous = await json(t.app, 'POST', '/api/v1/sessions', { ruleset_id: 1 });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.json().error_code).toBe('UNAUTHORIZED');
    const evaluate = await json(t.app, 'POST', '/api/v1/sessions', { ruleset_id: 1 }, { authorization: 'Bearer key-ev' });
    expect(evaluate.statusCode).toBe(404);
    expect(evaluate.json().error_code).toBe('NOT_FOUND');
    const read = await json(t.app, 'GET', '/api/v1/sessions/nope', undefined, { 'x-api-key': 'key-ev' });
    expect(read.json().error_code).toBe('SESSION_NOT_FOUND');
    const explainAnonymous = await json(t.app, 'POST', '/api/v1/sessions/nope/explain', { rule_id: 1 });
    expect(explainAnonymous.statusCode).toBe(401);
    expect(explainAnonymous.json().error_code).toBe('UNAUTHORIZED');
    const explain = await json(t.app, 'POST', '/api/v1/sessions/nope/explain', { rule_id: 1 }, { 'x-api-key': 'key-ev' });
    expect(explain.json().error_code).toBe('SESSION_NOT_FOUND');
  });
});

/** A port nothing listens on: bound once to learn a free one, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

describe('sessions over HTTP while Redis is unreachable', () => {
  const logs: string[] = [];
  let t: TestApp;
  let store: SessionStore;
  beforeAll(async () => {
    store = await openRedisSessionStore({ url: `redis://127.0.0.1:${await closedPort()}`, keyPrefix: 'x:', connectTimeoutMs: 200 });
    t = await startTestApp('pglite', {
      sessionStore: store,
      logger: createLogger('info', { write: (line: string) => void logs.push(line) }),
    });
  });
  afterAll(async () => {
    await t?.cleanup();
    await store?.close();
  });

  it('answers 503 UNAVAILABLE (retryable) for every operation', async () => {
    const set = await json(t.app, 'POST', '/api/v1/rulesets', { name: 'r', domain: 'd' });
    const id = `rs-${set.json().id}-${randomUUID()}`;
    const calls = [
      json(t.app, 'POST', '/api/v1/sessions', { ruleset_id: set.json().id }),
      json(t.app, 'POST', `/api/v1/sessions/${id}/facts`, { fact_id: 'f', event: {} }),
      json(t.app, 'GET', `/api/v1/sessions/${id}`),
      json(t.app, 'POST', `/api/v1/sessions/${id}/explain`, { rule_id: 1 }),
      json(t.app, 'DELETE', `/api/v1/sessions/${id}/facts/f`),
      json(t.app, 'DELETE', `/api/v1/sessions/${id}`),
    ];
    for (const response of await Promise.all(calls)) {
      expect(response.statusCode, response.body).toBe(503);
      expect(response.json().error_code).toBe('UNAVAILABLE');
    }
    // Logged as the state it is: a warning a refusal, naming Redis's own error, no stack trace of ours.
    const refusals = logs.map((line) => JSON.parse(line)).filter((entry) => entry.msg === 'request refused');
    expect(refusals).toHaveLength(calls.length);
    for (const entry of refusals) {
      expect(entry).toMatchObject({ level: 'warn', error_code: 'UNAVAILABLE', detail: expect.stringMatching(/unavailable/i) });
      expect(entry.err).toBeUndefined();
    }
    expect(refusals.some((entry) => typeof entry.cause === 'string')).toBe(true);
    expect(logs.some((line) => JSON.parse(line).level === 'error')).toBe(false);
  });
});

describe.each(STORES)('sessions over HTTP with the $name store', ({ open }) => {
  let t: TestApp;
  let small: TestApp;
  let store: SessionStore;
  /** The session clock: windows end here; tests move it forward. */
  let clock = Date.now();

  beforeAll(async () => {
    store = await open();
    t = await startTestApp('pglite', { sessionStore: store, sessionClock: () => clock });
    small = await startTestApp('pglite', { sessionStore: store, env: { RULES_SESSION_MAX_FACTS: '3', RULES_SESSION_MAX_BYTES: '1kb' } });
  });
  afterAll(async () => {
    await t?.cleanup();
    await small?.cleanup();
    await store?.close();
  });

  /** Rules in a fresh domain and a ruleset over it; returns the ruleset id and the rule ids by name. */
  async function ruleset(app: TestApp, rules: RuleSpec[]): Promise<{ rulesetId: number; ids: Record<string, number> }> {
    const domain = `d-${randomUUID()}`;
    const ids: Record<string, number> = {};
    for (const rule of rules) {
      const created = await json(app.app, 'POST', '/api/v1/rules', { ...rule, domain, action: `act_${rule.name}` });
      expect(created.statusCode, created.body).toBe(201);
      ids[rule.name] = created.json().id;
    }
    const set = await json(app.app, 'POST', '/api/v1/rulesets', { name: domain, domain });
    expect(set.statusCode, set.body).toBe(201);
    return { rulesetId: set.json().id, ids };
  }

  async function session(app: TestApp, rulesetId: number, ttl?: number): Promise<string> {
    const created = await json(app.app, 'POST', '/api/v1/sessions', {
      ruleset_id: rulesetId,
      ...(ttl === undefined ? {} : { ttl_seconds: ttl }),
    });
    expect(created.statusCode, created.body).toBe(201);
    return created.json().id;
  }

  async function add(sessionId: string, factId: string, event: Record<string, unknown>, app: TestApp = t) {
    const response = await json(app.app, 'POST', `/api/v1/sessions/${sessionId}/facts`, { fact_id: factId, event });
    expect(response.statusCode, response.body).toBe(200);
    return response.json();
  }

  const at = (secondsBeforeClock: number) => new Date(clock - secondsBeforeClock * 1_000).toISOString();

  it('creates, reads and deletes a session; gone afterwards', async () => {
    const { rulesetId, ids } = await ruleset(t, [{ name: 'big', condition_dsl: gt('amount', 100) }]);
    const created = await json(t.app, 'POST', '/api/v1/sessions', { ruleset_id: rulesetId });
    expect(created.statusCode).toBe(201);
    const body = created.json();
    expect(body).toEqual({
      id: expect.stringMatching(new RegExp(`^rs-${rulesetId}-[0-9a-f-]{36}$`)),
      ruleset_id: rulesetId,
      domain: expect.stringMatching(/^d-/),
      created_at: expect.stringMatching(/Z$/),
      expires_at: expect.stringMatching(/Z$/),
      fact_count: 0,
    });
    expect(created.headers.location).toBe(`/api/v1/sessions/${body.id}`);
    expect(Date.parse(body.expires_at) - Date.parse(body.created_at)).toBe(3_600_000);

    const result = await add(body.id, 'tx-1', { amount: 500 });
    expect(result).toEqual({
      session_id: body.id,
      fact_id: 'tx-1',
      execution_id: expect.any(String),
      fired_rules: [ids.big],
      actions: ['act_big'],
      latency_ms: expect.any(Number),
      activated: [ids.big],
      deactivated: [],
      fact_count: 1,
      revision: expect.any(Number),
      replaced: false,
      duplicate: false,
    });
    const execution = await json(t.app, 'GET', `/api/v1/executions/${result.execution_id}`);
    expect(execution.json()).toMatchObject({
      source: 'session',
      domain: body.domain,
      facts: { amount: 500 },
      fired_rules: [ids.big],
      // The latency the write was answered with, not the engine's share of it.
      latency_ms: result.latency_ms,
    });

    const read = await json(t.app, 'GET', `/api/v1/sessions/${body.id}`);
    expect(read.statusCode).toBe(200);
    expect(read.json()).toMatchObject({
      id: body.id,
      ruleset_id: rulesetId,
      fact_count: 1,
      facts: { 'tx-1': { amount: 500 } },
      active_rules: [ids.big],
      version: 1,
      aggregates: [],
      aggregates_as_of: expect.stringMatching(/Z$/),
    });

    const deleted = await json(t.app, 'DELETE', `/api/v1/sessions/${body.id}`);
    expect(deleted.statusCode).toBe(204);
    expect(deleted.body).toBe('');
    for (const [method, url, payload] of [
      ['GET', `/api/v1/sessions/${body.id}`, undefined],
      ['DELETE', `/api/v1/sessions/${body.id}`, undefined],
      ['POST', `/api/v1/sessions/${body.id}/facts`, { fact_id: 'x', event: {} }],
      ['DELETE', `/api/v1/sessions/${body.id}/facts/tx-1`, undefined],
    ] as const) {
      const gone = await json(t.app, method, url, payload);
      expect(gone.statusCode, `${method} ${url}`).toBe(404);
      expect(gone.json()).toEqual({ detail: `Session '${body.id}' does not exist or has expired.`, error_code: 'SESSION_NOT_FOUND' });
    }
  });

  it('takes ttl_seconds, and refuses an unknown ruleset with NOT_FOUND', async () => {
    const { rulesetId } = await ruleset(t, []);
    const created = await json(t.app, 'POST', '/api/v1/sessions', { ruleset_id: rulesetId, ttl_seconds: 60 });
    expect(Date.parse(created.json().expires_at) - Date.parse(created.json().created_at)).toBe(60_000);
    const unknown = await json(t.app, 'POST', '/api/v1/sessions', { ruleset_id: 2_000_000_000 });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toEqual({ detail: 'Ruleset 2000000000 does not exist.', error_code: 'NOT_FOUND' });
  });

  it('answers SESSION_NOT_FOUND for ids that never existed, whatever their shape', async () => {
    for (const id of [`rs-1-${randomUUID()}`, 'nope', 'stream:auth:user-1', 'a%20b']) {
      const response = await json(t.app, 'POST', `/api/v1/sessions/${id}/facts`, { fact_id: 'f', event: {} });
      expect(response.statusCode, id).toBe(404);
      expect(response.json().error_code).toBe('SESSION_NOT_FOUND');
      expect((await json(t.app, 'GET', `/api/v1/sessions/${id}`)).json().error_code).toBe('SESSION_NOT_FOUND');
    }
  });

  it('counts 3 failed logins within 600 s by event time, and lets old ones slide out of the window', async () => {
    clock = Date.now();
    const { rulesetId, ids } = await ruleset(t, [
      { name: 'brute', condition_dsl: count({ where: failedLogin, window_seconds: 600, value: 3 }) },
    ]);
    const id = await session(t, rulesetId);
    // Already outside the window when it arrives: stored, not counted.
    expect(await add(id, 'f0', { type: 'login_failed', timestamp: at(1_000) })).toMatchObject({ fired_rules: [], fact_count: 1 });
    expect((await add(id, 'f1', { type: 'login_failed', timestamp: at(500) })).fired_rules).toEqual([]);
    expect((await add(id, 'ok', { type: 'login', timestamp: at(450) })).fired_rules).toEqual([]);
    expect((await add(id, 'f2', { type: 'login_failed', timestamp: Date.parse(at(400)) })).fired_rules).toEqual([]);
    const third = await add(id, 'f3', { type: 'login_failed', timestamp: at(10) });
    expect(third).toMatchObject({ fired_rules: [ids.brute], actions: ['act_brute'], activated: [ids.brute], deactivated: [] });

    // 150 s later f1 (500 s old, now 650 s) has left the window: two failures remain.
    clock += 150_000;
    const later = await add(id, 'ok2', { type: 'login' });
    expect(later).toMatchObject({ fired_rules: [], activated: [], deactivated: [ids.brute], fact_count: 6 });
    const again = await add(id, 'f4', { type: 'login_failed' });
    expect(again).toMatchObject({ fired_rules: [ids.brute], activated: [ids.brute], deactivated: [] });
  });

  it('shows every accumulator with its value as of the latest write: three failed logins count 3, a retraction drops it', async () => {
    clock = Date.now();
    const { rulesetId, ids } = await ruleset(t, [
      { name: 'brute', condition_dsl: count({ where: failedLogin, window_seconds: 600, value: 3 }) },
      { name: 'avgSpend', condition_dsl: { type: 'accumulate', function: 'avg', field: 'amount', op: '>', value: 100 } },
      { name: 'big', condition_dsl: gt('amount', 100) },
    ]);
    const brute = 'count(type == "login_failed") over 600s';
    const id = await session(t, rulesetId);
    const read = async () => {
      const response = await json(t.app, 'GET', `/api/v1/sessions/${id}`);
      expect(response.statusCode, response.body).toBe(200);
      return response.json();
    };

    // Before any write: the empty values, as of the session's creation.
    const fresh = await read();
    expect(fresh.aggregates).toEqual([
      { rule_id: ids.brute, accumulator: brute, value: 0 },
      { rule_id: ids.avgSpend, accumulator: 'avg(amount)', value: null },
    ]);
    expect(fresh.aggregates_as_of).toBe(fresh.created_at);

    for (const factId of ['f1', 'f2', 'f3']) await add(id, factId, { type: 'login_failed', timestamp: at(60) });
    const three = await read();
    expect(three).toMatchObject({
      active_rules: [ids.brute],
      aggregates: [
        { rule_id: ids.brute, accumulator: brute, value: 3 },
        { rule_id: ids.avgSpend, accumulator: 'avg(amount)', value: null },
      ],
      aggregates_as_of: new Date(clock).toISOString(),
    });

    clock += 1_000;
    await add(id, 'buy', { type: 'purchase', amount: 250.5 });
    expect((await read()).aggregates.map((a: { value: unknown }) => a.value)).toEqual([3, 250.5]);

    clock += 1_000;
    const retracted = await json(t.app, 'DELETE', `/api/v1/sessions/${id}/facts/f2`);
    expect(retracted.json()).toMatchObject({ activated: [], deactivated: [ids.brute, ids.big] });
    const two = await read();
    expect(two).toMatchObject({ active_rules: [ids.avgSpend], aggregates_as_of: new Date(clock).toISOString(), version: 5 });
    expect(two.aggregates).toEqual([
      { rule_id: ids.brute, accumulator: brute, value: 2 },
      { rule_id: ids.avgSpend, accumulator: 'avg(amount)', value: 250.5 },
    ]);

    // A GET evicts nothing: the failures are out of the window by now, yet the values stay those of the latest write.
    const writtenAt = clock;
    clock += 3_600_000;
    expect(await read()).toMatchObject({ aggregates: two.aggregates, aggregates_as_of: new Date(writtenAt).toISOString(), version: 5 });
    clock = writtenAt;
  });

  it("lists the enabled rules' accumulators in fired order (priority, then id), and leaves a disabled rule's out", async () => {
    const { rulesetId, ids } = await ruleset(t, [
      { name: 'low', condition_dsl: count({ where: failedLogin, value: 3 }) },
      { name: 'high', condition_dsl: count({ where: failedLogin, value: 2 }), priority: 5 },
      { name: 'off', condition_dsl: count({ where: failedLogin, value: 1 }), enabled: false },
    ]);
    const id = await session(t, rulesetId);
    await add(id, 'f1', { type: 'login_failed' });
    const read = (await json(t.app, 'GET', `/api/v1/sessions/${id}`)).json();
    expect(read.aggregates.map((entry: { rule_id: number; value: number }) => [entry.rule_id, entry.value])).toEqual([
      [ids.high, 1],
      [ids.low, 1],
    ]);
    // Session explain still answers for the disabled rule.
    expect(await explain(id, { rule_id: ids.off })).toMatchObject({ rule_id: ids.off, session_id: id });
  });

  it('shows an accumulator whose node changed since the latest write as empty until the next write', async () => {
    clock = Date.now();
    const { rulesetId, ids } = await ruleset(t, [{ name: 'brute', condition_dsl: count({ where: failedLogin, value: 2 }) }]);
    const id = await session(t, rulesetId);
    await add(id, 'f1', { type: 'login_failed' });
    await add(id, 'f2', { type: 'login_failed' });
    const before = (await json(t.app, 'GET', `/api/v1/sessions/${id}`)).json();
    expect(before).toMatchObject({ active_rules: [ids.brute] });
    expect(before.aggregates).toEqual([{ rule_id: ids.brute, accumulator: 'count(type == "login_failed")', value: 2 }]);

    const patched = await json(t.app, 'PATCH', `/api/v1/rules/${ids.brute}`, {
      condition_dsl: count({ where: failedLogin, window_seconds: 900, value: 2 }),
    });
    expect(patched.statusCode, patched.body).toBe(200);
    // A changed node is a new accumulator (its id hashes the node): nothing has contributed to it yet.
    const changed = (await json(t.app, 'GET', `/api/v1/sessions/${id}`)).json();
    expect(changed.aggregates).toEqual([{ rule_id: ids.brute, accumulator: 'count(type == "login_failed") over 900s', value: 0 }]);
    expect(changed).toMatchObject({ active_rules: [ids.brute], aggregates_as_of: before.aggregates_as_of });

    await add(id, 'f3', { type: 'login_failed' });
    const after = (await json(t.app, 'GET', `/api/v1/sessions/${id}`)).json();
    expect(after).toMatchObject({ active_rules: [], aggregates: [{ rule_id: ids.brute, value: 1 }] });
  });

  /** POST /sessions/{id}/explain; asserts the status. */
  async function explain(sessionId: string, body: unknown, status = 200) {
    const response = await json(t.app, 'POST', `/api/v1/sessions/${sessionId}/explain`, body);
    expect(response.statusCode, response.body).toBe(status);
    return response.json();
  }

  it('explains the "three failures" rule with the session\'s count: not matched at 2 (actual: 2), matched at 3', async () => {
    clock = Date.now();
    const threeFailures = count({ where: failedLogin, window_seconds: 600, value: 3 });
    const { rulesetId, ids } = await ruleset(t, [{ name: 'brute', condition_dsl: threeFailures }]);
    const id = await session(t, rulesetId);
    const rendered = 'count(type == "login_failed") over 600s >= 3';

    const fresh = await explain(id, { rule_id: ids.brute });
    const created = (await json(t.app, 'GET', `/api/v1/sessions/${id}`)).json().created_at;
    expect(fresh).toMatchObject({ matched: false, failing_conditions: [`${rendered} (actual: 0)`], aggregates_as_of: created });

    await add(id, 'f1', { type: 'login_failed', timestamp: at(60) });
    clock += 1_000;
    await add(id, 'f2', { type: 'login_failed', timestamp: at(30) });
    const two = await explain(id, { rule_id: ids.brute });
    expect(two).toEqual({
      rule_id: ids.brute,
      rule_name: 'brute',
      condition_dsl: threeFailures,
      matched: false,
      matching_conditions: [],
      failing_conditions: [`${rendered} (actual: 2)`],
      explanation:
        `Rule 'brute' did not match: ${rendered} failed (actual: 2). Aggregates as of ${new Date(clock).toISOString()}; ` +
        'other conditions checked against an empty fact (no fact_id given).',
      revision: t.catalog.revision,
      session_id: id,
      fact_id: null,
      aggregates_as_of: new Date(clock).toISOString(),
    });
    // Outside a session the same rule sees one fact: count 1.
    const stateless = await json(t.app, 'POST', '/api/v1/explain', { rule_id: ids.brute, facts: { type: 'login_failed' } });
    expect(stateless.json().failing_conditions).toEqual([`${rendered} (actual: 1)`]);

    clock += 1_000;
    await add(id, 'f3', { type: 'login_failed', timestamp: at(5) });
    const three = await explain(id, { rule_id: ids.brute, fact_id: 'f3' });
    expect(three).toMatchObject({
      matched: true,
      matching_conditions: [`${rendered} (actual: 3)`],
      failing_conditions: [],
      fact_id: 'f3',
      aggregates_as_of: new Date(clock).toISOString(),
    });
    expect(three.explanation).toBe(
      `Rule 'brute' matched: ${rendered} (actual: 3) held. Aggregates as of ${new Date(clock).toISOString()}; ` +
        "other conditions checked against fact 'f3'.",
    );

    // Explaining is read-only and evicts nothing: an hour later the values are still those of the latest write.
    const before = (await json(t.app, 'GET', `/api/v1/sessions/${id}`)).json();
    const writtenAt = clock;
    clock += 3_600_000;
    expect(await explain(id, { rule_id: ids.brute })).toMatchObject({ matched: true, aggregates_as_of: new Date(writtenAt).toISOString() });
    expect((await json(t.app, 'GET', `/api/v1/sessions/${id}`)).json()).toEqual(before);
    clock = writtenAt;
  });

  it('explains a rule mixing an ordinary condition and an accumulate node against a chosen fact or the empty one', async () => {
    clock = Date.now();
    const mixed = { type: 'and', children: [eq('type', 'purchase'), sum('amount', { where: eq('type', 'purchase'), value: 5000 })] };
    const { rulesetId, ids } = await ruleset(t, [{ name: 'spend', condition_dsl: mixed }]);
    const id = await session(t, rulesetId);
    const spend = 'sum(amount where type == "purchase") > 5000';
    await add(id, 'p1', { type: 'purchase', amount: 3000 });
    await add(id, 'p2', { type: 'purchase', amount: 2500 });
    await add(id, 'r1', { type: 'refund', amount: 10 });

    const onPurchase = await explain(id, { rule_id: ids.spend, fact_id: 'p1' });
    expect(onPurchase).toMatchObject({
      matched: true,
      matching_conditions: ['type == "purchase"', `${spend} (actual: 5500)`],
      failing_conditions: [],
      fact_id: 'p1',
    });
    const onRefund = await explain(id, { rule_id: ids.spend, fact_id: 'r1' });
    expect(onRefund).toMatchObject({
      matched: false,
      matching_conditions: [`${spend} (actual: 5500)`],
      failing_conditions: ['type == "purchase" (actual: "refund")'],
      fact_id: 'r1',
    });
    // Without fact_id the ordinary condition sees {}, as a retraction evaluates it: the rule cannot hold.
    const onNothing = await explain(id, { rule_id: ids.spend });
    expect(onNothing).toMatchObject({
      matched: false,
      matching_conditions: [`${spend} (actual: 5500)`],
      failing_conditions: ['type == "purchase" (missing)'],
      fact_id: null,
    });
    expect(onNothing.explanation).toContain('other conditions checked against an empty fact (no fact_id given).');

    // A disabled rule of the session's domain is still explained (as /explain does), with the value its latest write stored.
    const disabled = await json(t.app, 'PATCH', `/api/v1/rules/${ids.spend}`, { enabled: false });
    expect(disabled.statusCode, disabled.body).toBe(200);
    expect(await explain(id, { rule_id: ids.spend, fact_id: 'p2' })).toMatchObject({ matched: true, fact_id: 'p2' });
  });

  it('refuses to explain for an unknown session, rule or fact, a rule of another domain and bad bodies, changing nothing', async () => {
    const { rulesetId, ids } = await ruleset(t, [{ name: 'brute', condition_dsl: count({ where: failedLogin, value: 3 }) }]);
    const other = await ruleset(t, [{ name: 'elsewhere', condition_dsl: gt('amount', 1) }]);
    const id = await session(t, rulesetId);
    await add(id, 'f1', { type: 'login_failed' });
    const domain = (await json(t.app, 'GET', `/api/v1/sessions/${id}`)).json().domain;

    for (const unknown of [`rs-${rulesetId}-${randomUUID()}`, `rs-1-${randomUUID()}`, 'nope', 'stream:auth:user-1']) {
      expect(await explain(unknown, { rule_id: ids.brute }, 404)).toEqual({
        detail: `Session '${unknown}' does not exist or has expired.`,
        error_code: 'SESSION_NOT_FOUND',
      });
    }
    expect(await explain(id, { rule_id: 2_000_000_000 }, 404)).toEqual({
      detail: 'Rule 2000000000 does not exist.',
      error_code: 'RULE_NOT_FOUND',
    });
    expect(await explain(id, { rule_id: other.ids.elsewhere }, 404)).toEqual({
      detail:
        `Rule ${other.ids.elsewhere} is not in the ruleset of session '${id}': it belongs to domain ` +
        `'${(await json(t.app, 'GET', `/api/v1/rules/${other.ids.elsewhere}`)).json().domain}', the session to '${domain}'.`,
      error_code: 'RULE_NOT_FOUND',
    });
    expect(await explain(id, { rule_id: ids.brute, fact_id: 'f9' }, 404)).toEqual({
      detail: `Session '${id}' holds no fact 'f9'.`,
      error_code: 'NOT_FOUND',
    });
    // Only the session's own facts: a name of an inherited property is not one.
    expect((await explain(id, { rule_id: ids.brute, fact_id: 'constructor' }, 404)).error_code).toBe('NOT_FOUND');

    const badBodies: [unknown, string][] = [
      [{}, 'rule_id'],
      [{ rule_id: 'one' }, 'rule_id'],
      [{ rule_id: 0 }, 'rule_id'],
      [{ rule_id: 1.5 }, 'rule_id'],
      [{ rule_id: ids.brute, fact_id: 'a b' }, 'fact_id'],
      [{ rule_id: ids.brute, fact_id: '' }, 'fact_id'],
      [{ rule_id: ids.brute, fact_id: 7 }, 'fact_id'],
      [{ rule_id: ids.brute, facts: {} }, 'facts'],
      [[ids.brute], ''],
    ];
    for (const [body, mentioned] of badBodies) {
      const response = await explain(id, body, 400);
      expect(response, JSON.stringify(body)).toEqual({ detail: expect.any(String), error_code: 'VALIDATION_ERROR' });
      expect(response.detail).toContain(mentioned);
    }
    expect((await json(t.app, 'GET', `/api/v1/sessions/${id}`)).json()).toMatchObject({ fact_count: 1, version: 1 });
  });

  it('accepts a sum that overflows to Infinity: the rule still compares it, the session read shows null', async () => {
    const { rulesetId, ids } = await ruleset(t, [{ name: 'huge', condition_dsl: sum('amount', { value: 1 }) }]);
    const id = await session(t, rulesetId);
    expect(await add(id, 'a', { amount: 1e308 })).toMatchObject({ fired_rules: [ids.huge], fact_count: 1 });
    // Infinity still compares (> 1 holds); JSON cannot carry it, so the session read shows the sum as null.
    expect(await add(id, 'b', { amount: 1e308 })).toMatchObject({ fired_rules: [ids.huge], activated: [], fact_count: 2 });
    const read = await json(t.app, 'GET', `/api/v1/sessions/${id}`);
    expect(read.statusCode).toBe(200);
    expect(read.json()).toMatchObject({ fact_count: 2, active_rules: [ids.huge], aggregates: [{ rule_id: ids.huge, value: null }] });
    // Explain compares what the write compared: the rule active, explained as matched on Infinity.
    const explained = await json(t.app, 'POST', `/api/v1/sessions/${id}/explain`, { rule_id: ids.huge });
    expect(explained.json()).toMatchObject({ matched: true, matching_conditions: ['sum(amount) > 1 (actual: Infinity)'] });
  });

  it('fires "total spend above 5000" with sum, reporting activated and deactivated only on change', async () => {
    const { rulesetId, ids } = await ruleset(t, [
      { name: 'spend', condition_dsl: sum('amount', { where: eq('type', 'purchase'), value: 5000 }) },
      { name: 'purchase', condition_dsl: eq('type', 'purchase'), priority: -1 },
    ]);
    const id = await session(t, rulesetId);
    expect(await add(id, 'p1', { type: 'purchase', amount: 2000 })).toMatchObject({
      fired_rules: [ids.purchase],
      activated: [ids.purchase],
      deactivated: [],
    });
    expect(await add(id, 'p2', { type: 'purchase', amount: 2500 })).toMatchObject({ fired_rules: [ids.purchase], activated: [] });
    expect(await add(id, 'r1', { type: 'refund', amount: 9000 })).toMatchObject({
      fired_rules: [],
      activated: [],
      deactivated: [ids.purchase],
    });
    expect(await add(id, 'p3', { type: 'purchase', amount: 1000.5 })).toMatchObject({
      fired_rules: [ids.spend, ids.purchase],
      actions: ['act_spend', 'act_purchase'],
      activated: [ids.spend, ids.purchase],
    });
    expect(await add(id, 'p4', { type: 'purchase', amount: 1 })).toMatchObject({
      fired_rules: [ids.spend, ids.purchase],
      activated: [],
      deactivated: [],
    });
    // Replacing p3 takes its 1000.5 back: 2000 + 2500 + 1 + 10 = 4511.
    expect(await add(id, 'p3', { type: 'purchase', amount: 10 })).toMatchObject({
      fired_rules: [ids.purchase],
      deactivated: [ids.spend],
      replaced: true,
      fact_count: 5,
    });
  });

  it('replaces a fact with the same fact_id and retracts facts, a retraction deactivating rules', async () => {
    const { rulesetId, ids } = await ruleset(t, [
      { name: 'pair', condition_dsl: count({ value: 2 }) },
      { name: 'big', condition_dsl: gt('amount', 100) },
    ]);
    const id = await session(t, rulesetId);
    expect(await add(id, 'a', { amount: 500 })).toMatchObject({ fired_rules: [ids.big], fact_count: 1, replaced: false });
    expect(await add(id, 'a', { amount: 5 })).toMatchObject({ fired_rules: [], deactivated: [ids.big], fact_count: 1, replaced: true });
    expect(await add(id, 'b', { amount: 700 })).toMatchObject({ fired_rules: [ids.pair, ids.big], fact_count: 2 });
    expect((await json(t.app, 'GET', `/api/v1/sessions/${id}`)).json().facts).toEqual({ a: { amount: 5 }, b: { amount: 700 } });

    // After a retraction there is no current fact: ordinary conditions see {}; the count drops to 1.
    const retracted = await json(t.app, 'DELETE', `/api/v1/sessions/${id}/facts/b`);
    expect(retracted.statusCode).toBe(200);
    expect(retracted.json()).toMatchObject({
      session_id: id,
      fact_id: 'b',
      fired_rules: [],
      activated: [],
      deactivated: [ids.pair, ids.big],
      fact_count: 1,
      replaced: false,
      duplicate: false,
    });
    const missing = await json(t.app, 'DELETE', `/api/v1/sessions/${id}/facts/b`);
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual({ detail: `Session '${id}' holds no fact 'b'.`, error_code: 'NOT_FOUND' });
    const after = (await json(t.app, 'GET', `/api/v1/sessions/${id}`)).json();
    expect(after).toMatchObject({ fact_count: 1, facts: { a: { amount: 5 } }, active_rules: [], version: 4 });
  });

  it('answers an identical re-send with the change the first add caused and applies nothing; a changed fact still replaces', async () => {
    const { rulesetId, ids } = await ruleset(t, [
      { name: 'pair', condition_dsl: count({ value: 2 }) },
      // Counting b twice would take the sum to 160 and fire this one.
      { name: 'spend', condition_dsl: sum('amount', { value: 150 }), priority: -1 },
    ]);
    const id = await session(t, rulesetId);
    await add(id, 'a', { amount: 60 });
    const first = await add(id, 'b', { amount: 50 });
    expect(first).toMatchObject({ fired_rules: [ids.pair], activated: [ids.pair], deactivated: [], fact_count: 2, duplicate: false });

    clock += 5_000;
    const resend = await add(id, 'b', { amount: 50 });
    expect(resend).toMatchObject({
      fact_id: 'b',
      fired_rules: [ids.pair],
      activated: [ids.pair],
      deactivated: [],
      fact_count: 2,
      replaced: false,
      duplicate: true,
    });
    expect(resend.execution_id).not.toBe(first.execution_id);
    const read = (await json(t.app, 'GET', `/api/v1/sessions/${id}`)).json();
    expect(read).toMatchObject({ fact_count: 2, version: 2, active_rules: [ids.pair], facts: { a: { amount: 60 }, b: { amount: 50 } } });

    // A later write does not change what the re-send of b reports.
    expect(await add(id, 'c', { amount: 1 })).toMatchObject({ activated: [], deactivated: [], fact_count: 3 });
    expect(await add(id, 'b', { amount: 50 })).toMatchObject({ activated: [ids.pair], duplicate: true, fact_count: 3 });

    // Another fact under b replaces it: 60 + 100 + 1 = 161.
    const changed = await add(id, 'b', { amount: 100 });
    expect(changed).toMatchObject({ fired_rules: [ids.pair, ids.spend], activated: [ids.spend], replaced: true, duplicate: false });
    expect(await add(id, 'b', { amount: 100 })).toMatchObject({ activated: [ids.spend], deactivated: [], duplicate: true });
    expect((await json(t.app, 'GET', `/api/v1/sessions/${id}`)).json()).toMatchObject({ fact_count: 3, version: 4 });
  });

  it('keeps an accumulate-only rule active across a retraction that leaves its aggregate true', async () => {
    const { rulesetId, ids } = await ruleset(t, [{ name: 'any', condition_dsl: count({ value: 1 }) }]);
    const id = await session(t, rulesetId);
    await add(id, 'a', {});
    await add(id, 'b', {});
    const retracted = (await json(t.app, 'DELETE', `/api/v1/sessions/${id}/facts/a`)).json();
    expect(retracted).toMatchObject({ fired_rules: [ids.any], activated: [], deactivated: [], fact_count: 1 });
  });

  it('refuses a new fact beyond RULES_SESSION_MAX_FACTS with SESSION_FULL and loses nothing', async () => {
    const { rulesetId } = await ruleset(small, [{ name: 'n', condition_dsl: count({ value: 3 }) }]);
    const id = await session(small, rulesetId);
    for (const factId of ['a', 'b', 'c']) await add(id, factId, { n: factId }, small);
    const full = await json(small.app, 'POST', `/api/v1/sessions/${id}/facts`, { fact_id: 'd', event: {} });
    expect(full.statusCode).toBe(409);
    expect(full.json()).toEqual({
      detail: `Session '${id}' already holds the maximum of 3 facts; retract one first.`,
      error_code: 'SESSION_FULL',
    });
    expect(await add(id, 'b', { n: 'b2' }, small)).toMatchObject({ replaced: true, fact_count: 3 });
    const read = (await json(small.app, 'GET', `/api/v1/sessions/${id}`)).json();
    expect(read.facts).toEqual({ a: { n: 'a' }, b: { n: 'b2' }, c: { n: 'c' } });
  });

  it('refuses a fact that would pass RULES_SESSION_MAX_BYTES of fact JSON with SESSION_FULL and loses nothing', async () => {
    const { rulesetId } = await ruleset(small, [{ name: 'n', condition_dsl: count({ value: 3 }) }]);
    const id = await session(small, rulesetId);
    const padded = (size: number) => ({ pad: 'x'.repeat(size) });
    await add(id, 'a', padded(400), small);
    await add(id, 'b', padded(400), small);
    const full = await json(small.app, 'POST', `/api/v1/sessions/${id}/facts`, { fact_id: 'c', event: padded(300) });
    expect(full.statusCode).toBe(409);
    expect(full.json()).toEqual({
      detail: `Session '${id}' would hold more than 1024 characters of fact JSON (RULES_SESSION_MAX_BYTES); retract facts first, or send a smaller one.`,
      error_code: 'SESSION_FULL',
    });
    // Larger than the whole allowance: no retraction would make room.
    const alone = await json(small.app, 'POST', `/api/v1/sessions/${id}/facts`, { fact_id: 'c', event: padded(1_100) });
    expect([alone.statusCode, alone.json()]).toEqual([
      409,
      {
        detail: 'The fact is more than the 1024 characters of fact JSON a session may hold (RULES_SESSION_MAX_BYTES); send a smaller one.',
        error_code: 'SESSION_FULL',
      },
    ]);
    // A smaller replacement fits; the session reads back whole, the refused fact not in it.
    expect(await add(id, 'b', padded(100), small)).toMatchObject({ replaced: true, fact_count: 2 });
    const read = (await json(small.app, 'GET', `/api/v1/sessions/${id}`)).json();
    // Redis hands a hash back in no set order.
    expect(Object.keys(read.facts).sort()).toEqual(['a', 'b']);
  });

  it('refuses bad bodies and ids with 400 VALIDATION_ERROR, storing nothing', async () => {
    const { rulesetId } = await ruleset(t, []);
    const id = await session(t, rulesetId);
    const badCreates: unknown[] = [
      {},
      { ruleset_id: 'one' },
      { ruleset_id: rulesetId, ttl_seconds: 0 },
      { ruleset_id: rulesetId, ttl_seconds: 1.5 },
      { ruleset_id: rulesetId, ttl_seconds: 7 * 24 * 3600 + 1 },
      { ruleset_id: rulesetId, ttl_seconds: '60' },
      { ruleset_id: rulesetId, extra: true },
    ];
    for (const body of badCreates) {
      const response = await json(t.app, 'POST', '/api/v1/sessions', body);
      expect(response.statusCode, JSON.stringify(body)).toBe(400);
      expect(response.json()).toEqual({ detail: expect.any(String), error_code: 'VALIDATION_ERROR' });
    }
    const badAdds: [unknown, string][] = [
      [{ event: { a: 1 } }, 'fact_id'],
      [{ fact_id: 'f' }, 'event'],
      [{ fact_id: 'f', event: [1, 2] }, 'event'],
      [{ fact_id: 'f', event: 'login' }, 'event'],
      [{ fact_id: 'f', event: null }, 'event'],
      [{ fact_id: 'a b', event: {} }, 'fact_id'],
      [{ fact_id: '', event: {} }, 'fact_id'],
      [{ fact_id: 'f', event: {}, extra: 1 }, 'extra'],
      [{ fact_id: 'f', event: { timestamp: 'yesterday' } }, 'event.timestamp must be an ISO 8601 timestamp'],
      [{ fact_id: '..', event: {} }, 'dots only'],
      [{ fact_id: '.', event: {} }, 'dots only'],
      // Microseconds: year 57,000 would count in every window for as long as the session lives.
      [{ fact_id: 'f', event: { timestamp: Date.now() * 1_000 } }, 'ahead of the service'],
      [{ fact_id: 'f', event: { timestamp: new Date(Date.now() + 2 * 3_600_000).toISOString() } }, 'ahead of the service'],
    ];
    for (const [body, mentioned] of badAdds) {
      const response = await json(t.app, 'POST', `/api/v1/sessions/${id}/facts`, body);
      expect(response.statusCode, JSON.stringify(body)).toBe(400);
      expect(response.json().error_code).toBe('VALIDATION_ERROR');
      expect(response.json().detail).toContain(mentioned);
    }
    const badFactId = await json(t.app, 'DELETE', `/api/v1/sessions/${id}/facts/a%20b`);
    expect(badFactId.statusCode).toBe(400);
    expect((await json(t.app, 'GET', `/api/v1/sessions/${id}`)).json()).toMatchObject({ fact_count: 0, facts: {}, version: 0 });
  });

  it('answers random add-fact bodies with 200 or a 4xx error body, never a 5xx, and keeps every accepted fact', async () => {
    const { rulesetId } = await ruleset(t, [
      { name: 'n', condition_dsl: count({ where: eq('kind', 'x'), window_seconds: 60, value: 2 }) },
      { name: 's', condition_dsl: sum('amount', { value: 10 }) },
    ]);
    const id = await session(t, rulesetId);
    const accepted = new Set<string>();
    const factId = fc.oneof(fc.constantFrom('a', 'b', 'c', 'x:1', 'y.2'), fc.string({ maxLength: 4 }));
    const event = fc.oneof(
      fc.dictionary(
        fc.constantFrom('kind', 'amount', 'timestamp', 'other'),
        fc.oneof(fc.jsonValue(), fc.constantFrom('x', 5, '2024-05-01T00:00:00Z')),
      ),
      fc.jsonValue(),
    );
    await fc.assert(
      fc.asyncProperty(fc.record({ fact_id: factId, event }, { requiredKeys: [] }), async (body) => {
        const response = await json(t.app, 'POST', `/api/v1/sessions/${id}/facts`, body);
        if (response.statusCode === 200) {
          accepted.add(String(body.fact_id));
          expect(response.json().fact_count).toBe(accepted.size);
          return;
        }
        expect(response.statusCode).toBe(400);
        expect(response.json()).toEqual({ detail: expect.any(String), error_code: 'VALIDATION_ERROR' });
      }),
      { numRuns: 150, seed: 7 },
    );
    expect(accepted.size).toBeGreaterThan(0);
    expect((await json(t.app, 'GET', `/api/v1/sessions/${id}`)).json().fact_count).toBe(accepted.size);
  });

  it('describes the session routes and bodies in the OpenAPI document', async () => {
    const document = (await json(t.app, 'GET', '/openapi.json')).json();
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining([
        '/api/v1/sessions',
        '/api/v1/sessions/{id}',
        '/api/v1/sessions/{id}/facts',
        '/api/v1/sessions/{id}/facts/{fact_id}',
        '/api/v1/sessions/{id}/explain',
      ]),
    );
    expect(Object.keys(document.components.schemas)).toEqual(
      expect.arrayContaining([
        'CreateSessionRequest',
        'Session',
        'SessionDetails',
        'SessionAggregate',
        'AddFactRequest',
        'SessionEvaluation',
        'SessionExplainRequest',
        'SessionExplanation',
      ]),
    );
    expect(Object.keys(document.components.schemas.SessionDetails.properties)).toEqual(
      expect.arrayContaining(['active_rules', 'aggregates', 'aggregates_as_of']),
    );
    expect(Object.keys(document.components.schemas.SessionExplanation.properties)).toEqual(
      expect.arrayContaining(['matched', 'failing_conditions', 'explanation', 'session_id', 'fact_id', 'aggregates_as_of']),
    );
    // A 204 has no body: no content is declared, so generated clients do not try to parse one.
    expect(document.paths['/api/v1/sessions/{id}'].delete.responses['204']).toEqual({ description: 'Deleted; no body.' });
    expect(document.paths['/api/v1/rules/{id}'].delete.responses['204']).toEqual({ description: 'Deleted; no body.' });
  });

  it('serves 200 concurrent adds to one session with an exact count and an exact sum', async () => {
    const { rulesetId, ids } = await ruleset(t, [
      { name: 'all200', condition_dsl: count({ op: '==', value: 200 }) },
      { name: 'total', condition_dsl: sum('amount', { op: '==', value: 20_100 }) },
    ]);
    const id = await session(t, rulesetId);
    const responses = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        json(t.app, 'POST', `/api/v1/sessions/${id}/facts`, { fact_id: `f${i}`, event: { amount: i + 1 } }),
      ),
    );
    expect(responses.map((response) => response.statusCode)).toEqual(new Array(200).fill(200));
    const results = responses.map((response) => response.json());
    expect(new Set(results.map((result) => result.fact_count)).size).toBe(200);
    // Exactly one write saw all 200 facts, and only there do count == 200 and sum == 1 + ... + 200 hold.
    const complete = results.filter((result) => result.fact_count === 200);
    expect(complete).toHaveLength(1);
    expect(complete[0].fired_rules).toEqual([ids.all200, ids.total]);
    expect(results.filter((result) => result.fired_rules.length > 0)).toHaveLength(1);
    const read = (await json(t.app, 'GET', `/api/v1/sessions/${id}`)).json();
    expect(read).toMatchObject({ fact_count: 200, version: 200, active_rules: [ids.all200, ids.total] });
  });
});
