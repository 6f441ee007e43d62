// Sessions over Kafka on a real broker and real Redis: session_id facts give what HTTP gives, unknown or full sessions
// dead-letter, streaming mode publishes only changes, and a Redis outage is waited out with nothing lost or counted twice.
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Admin, Consumer, Kafka, Message } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionResultMessage } from '../../../src/contracts/kafka-messages.ts';
import { ServiceMetrics } from '../../../src/evaluation/service-metrics.ts';
import { openRedisSessionStore, type RedisSessionStore } from '../../../src/sessions/redis-session-store.ts';
import { killRedisServer, startRedisServer } from '../../helpers/redis-server.ts';
import { useStackResources } from '../../helpers/stack.ts';
import { startTcpProxy, type TcpProxy } from '../../helpers/tcp-proxy.ts';
import {
  deleteTestTopics,
  eventually,
  firstAnswers,
  freePort,
  headersAsText,
  type InProcessService,
  kafkaConfig,
  parse,
  produce,
  type Received,
  startInProcessService,
  type TestTopics,
  testKafka,
  uniqueTopics,
} from './support.ts';

const resources = useStackResources();

const LOCK = {
  type: 'and',
  children: [
    {
      type: 'accumulate',
      function: 'count',
      where: { type: 'condition', field: 'type', op: '==', value: 'login_failed' },
      window_seconds: 600,
      op: '>=',
      value: 3,
    },
    { type: 'condition', field: 'type', op: '==', value: 'login_failed' },
  ],
};
const VIP = {
  type: 'accumulate',
  function: 'sum',
  field: 'amount',
  where: { type: 'condition', field: 'type', op: '==', value: 'purchase' },
  op: '>',
  value: 100,
};
const RECEIPT = { type: 'condition', field: 'type', op: '==', value: 'purchase' };

async function post(app: FastifyInstance, url: string, body: unknown) {
  return app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body) });
}

async function createRule(app: FastifyInstance, name: string, domain: string, condition_dsl: unknown, action: string): Promise<number> {
  const response = await post(app, '/api/v1/rules', { name, domain, condition_dsl, action });
  expect(response.statusCode, response.body).toBe(201);
  return response.json<{ id: number }>().id;
}

async function createSession(app: FastifyInstance, domain: string): Promise<string> {
  const ruleset = await post(app, '/api/v1/rulesets', { name: `rs-${domain}-${Math.random()}`, domain });
  expect(ruleset.statusCode, ruleset.body).toBe(201);
  const session = await post(app, '/api/v1/sessions', { ruleset_id: ruleset.json<{ id: number }>().id });
  expect(session.statusCode, session.body).toBe(201);
  return session.json<{ id: string }>().id;
}

/** Reads the topics from the beginning for the whole test, so each step can wait for its own answer. */
class TopicReader {
  readonly received: Received[] = [];
  readonly #consumer: Consumer;

  private constructor(consumer: Consumer) {
    this.#consumer = consumer;
  }

  static async start(kafka: Kafka, topics: string[], groupId: string): Promise<TopicReader> {
    const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 100 });
    const reader = new TopicReader(consumer);
    await consumer.connect();
    await consumer.subscribe({ topics, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ topic, partition, message }) => {
        reader.received.push({
          topic,
          partition,
          offset: message.offset,
          key: message.key,
          value: message.value,
          headers: headersAsText(message.headers),
        });
      },
    });
    return reader;
  }

  /** Each input's first answer on `topic`, in read order: after a rebalance, at-least-once may answer a run again. */
  on(topic: string): Received[] {
    return firstAnswers(this.received.filter((message) => message.topic === topic));
  }

  /** Answers read more than once on any topic: none unless the consumer rejoined its group. */
  repeats(): number {
    const topics = new Set(this.received.map((message) => message.topic));
    return this.received.length - [...topics].reduce((answers, topic) => answers + this.on(topic).length, 0);
  }

  /** Waits until `topic` holds answers to at least `count` inputs; fails the test (with what was read) after the guard time. */
  async waitFor(topic: string, count: number, guardMs = 30_000): Promise<Received[]> {
    const reached = await eventually(() => this.on(topic).length >= count, guardMs, 20);
    expect(reached, `${count} messages on ${topic}; read ${this.on(topic).length}`).toBe(true);
    return this.on(topic);
  }

  stop(): Promise<void> {
    return this.#consumer.disconnect();
  }
}

interface Harness {
  topics: TestTopics;
  kafka: Kafka;
  admin: Admin;
  reader: TopicReader;
  service: InProcessService;
  store: RedisSessionStore;
}

async function startHarness(
  label: string,
  options: { streaming?: boolean; redisUrl?: string; sessionMaxFacts?: number; partitions?: number } = {},
): Promise<Harness> {
  const topics = uniqueTopics(label);
  const kafka = testKafka();
  const admin = kafka.admin();
  await admin.connect();
  const store = await openRedisSessionStore({
    url: options.redisUrl ?? resources.redisUrl,
    keyPrefix: resources.keyPrefix(`kafka-${label}`),
    connectTimeoutMs: 500,
  });
  const service = await startInProcessService(
    kafkaConfig(topics, { streaming: options.streaming ?? false, partitions: options.partitions ?? 3 }),
    {
      changelogTopic: topics.changelog,
      sessionStore: store,
      ...(options.sessionMaxFacts === undefined ? {} : { sessionMaxFacts: options.sessionMaxFacts }),
      tuning: { backoffInitialMs: 100, backoffMaxMs: 1_000 },
    },
  );
  const reader = await TopicReader.start(kafka, [topics.results, topics.dlq], `read-${topics.group}`);
  return { topics, kafka, admin, reader, service, store };
}

/** True once the consumer rejoined its group: at-least-once may then have answered uncommitted writes again. */
function rebalanced(harness: Harness): boolean {
  return harness.service.pipeline.state().group_joins > 1;
}

function itAnswersEachInputOnce(harness: () => Harness): void {
  it('answered each input once: nothing was repeated, unless the consumer rejoined its group', () => {
    expect({ repeats: harness().reader.repeats(), rebalanced: rebalanced(harness()) }).toSatisfy(
      ({ repeats, rebalanced }: { repeats: number; rebalanced: boolean }) => repeats === 0 || rebalanced,
    );
  });
}

async function stopHarness(harness: Harness | undefined): Promise<void> {
  if (harness === undefined) return;
  await harness.reader.stop();
  await harness.service.stop();
  await harness.store.close();
  await deleteTestTopics(harness.admin, harness.topics);
  await harness.admin.disconnect();
}

const COMPARED = ['fired_rules', 'actions', 'activated', 'deactivated', 'fact_count', 'replaced'] as const;
const compared = (result: Record<string, unknown>) => Object.fromEntries(COMPARED.map((field) => [field, result[field]]));

describe('Kafka sessions: facts with a session_id', () => {
  let harness: Harness;
  let rules: { lock: number; vip: number; receipt: number };

  beforeAll(async () => {
    harness = await startHarness('sessions', { sessionMaxFacts: 8 });
    const { app } = harness.service;
    rules = {
      lock: await createRule(app, 'lock', 'auth', LOCK, 'lock_account'),
      vip: await createRule(app, 'vip', 'auth', VIP, 'vip'),
      receipt: await createRule(app, 'receipt', 'auth', RECEIPT, 'receipt'),
    };
  });

  afterAll(() => stopHarness(harness));

  it('gives the same results as HTTP when one session is fed alternately over Kafka and HTTP', async () => {
    const { app } = harness.service;
    const mixed = await createSession(app, 'auth');
    const twin = await createSession(app, 'auth');
    const steps: { fact_id: string | undefined; event: Record<string, unknown> }[] = [
      { fact_id: undefined, event: { type: 'login_failed' } },
      { fact_id: 'f1', event: { type: 'login_failed' } },
      { fact_id: 'f2', event: { type: 'purchase', amount: 60 } },
      { fact_id: 'f3', event: { type: 'login_failed' } },
      { fact_id: 'f4', event: { type: 'purchase', amount: 50 } },
      { fact_id: 'f5', event: { type: 'login_failed' } },
      { fact_id: 'f2', event: { type: 'purchase', amount: 10 } },
      { fact_id: 'f7', event: { type: 'login_ok' } },
    ];
    const viaMixed: Record<string, unknown>[] = [];
    const viaTwin: Record<string, unknown>[] = [];
    let sentOverKafka = 0;
    for (const [index, step] of steps.entries()) {
      if (index % 2 === 0) {
        const value = { facts: step.event, session_id: mixed, ...(step.fact_id === undefined ? {} : { fact_id: step.fact_id }) };
        await produce(harness.kafka, harness.topics.facts, [
          {
            key: mixed,
            value: JSON.stringify(value),
            headers: { traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`, step: String(index) },
          },
        ]);
        sentOverKafka += 1;
        const results = await harness.reader.waitFor(harness.topics.results, sentOverKafka);
        const received = results.at(-1)!;
        expect(received.headers.step).toBe(String(index));
        viaMixed.push(parse(received));
      } else {
        const response = await post(app, `/api/v1/sessions/${mixed}/facts`, { fact_id: step.fact_id, event: step.event });
        expect(response.statusCode, response.body).toBe(200);
        viaMixed.push(response.json());
      }
      const twinResponse = await post(app, `/api/v1/sessions/${twin}/facts`, { fact_id: step.fact_id ?? 'f0', event: step.event });
      expect(twinResponse.statusCode, twinResponse.body).toBe(200);
      viaTwin.push(twinResponse.json());
    }
    expect(viaMixed.map(compared)).toEqual(viaTwin.map(compared));
    // The sequence exercises activation, deactivation and replacement, so the comparison is not vacuous.
    expect(viaTwin.map((result) => [result.activated, result.deactivated, result.fact_count])).toEqual([
      [[], [], 1],
      [[], [], 2],
      [[rules.receipt], [], 3],
      [[rules.lock], [rules.receipt], 4],
      [[rules.vip, rules.receipt], [rules.lock], 5],
      [[rules.lock], [rules.receipt], 6],
      [[rules.receipt], [rules.lock, rules.vip], 6],
      [[], [rules.receipt], 7],
    ]);
    expect(viaMixed[6]).toMatchObject({ replaced: true, fired_rules: [rules.receipt] });
  });

  it('publishes the session result keyed like its input, with headers, source, revision and a recorded execution', async () => {
    const results = harness.reader.on(harness.topics.results);
    const first = results[0]!;
    const body = parse<SessionResultMessage>(first);
    expect(Object.keys(body).sort()).toEqual(
      [
        'session_id',
        'fact_id',
        'execution_id',
        'fired_rules',
        'actions',
        'activated',
        'deactivated',
        'fact_count',
        'replaced',
        'duplicate',
        'latency_ms',
        'revision',
        'source',
      ].sort(),
    );
    expect(String(first.key)).toBe(body.session_id);
    expect(first.headers.traceparent).toBe(`00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`);
    expect(first.headers['content-type']).toBe('application/json');
    expect(body.source.topic).toBe(harness.topics.facts);
    // No fact_id: the fact is stored under its position, so a redelivery would replace it.
    expect(body.fact_id).toBe(`kafka:${harness.topics.facts}:${body.source.partition}:${body.source.offset}`);
    expect(body.revision).toBe(harness.service.catalog.revision);
    const execution = await harness.service.app.inject({ method: 'GET', url: `/api/v1/executions/${body.execution_id}` });
    expect(execution.statusCode).toBe(200);
    expect(execution.json()).toMatchObject({ source: 'session', domain: 'auth', fired_rules: body.fired_rules });
  });

  it('dead-letters unknown, expired and full sessions and a domain beside a session_id, and answers the good messages around them', async () => {
    const { app } = harness.service;
    const open = await createSession(app, 'auth');
    const full = await createSession(app, 'auth');
    for (let index = 0; index < 8; index += 1) await harness.service.sessions.addFact(full, `full-${index}`, { type: 'login_ok' });
    const deleted = await createSession(app, 'auth');
    expect((await app.inject({ method: 'DELETE', url: `/api/v1/sessions/${deleted}` })).statusCode).toBe(204);
    const cases: { value: unknown; code?: string; detail?: string }[] = [
      { value: { facts: { type: 'login_failed' }, session_id: open, fact_id: 'g1' } },
      {
        value: { facts: { type: 'login_failed' }, session_id: 'rs-999-00000000-0000-0000-0000-000000000000' },
        code: 'SESSION_NOT_FOUND',
        detail: "Session 'rs-999-00000000-0000-0000-0000-000000000000' does not exist or has expired.",
      },
      {
        value: { facts: {}, session_id: deleted },
        code: 'SESSION_NOT_FOUND',
        detail: `Session '${deleted}' does not exist or has expired.`,
      },
      { value: { facts: {}, session_id: 'no-such-session' }, code: 'SESSION_NOT_FOUND' },
      {
        value: { facts: {}, session_id: full, fact_id: 'one-too-many' },
        code: 'SESSION_FULL',
        detail: `Session '${full}' already holds the maximum of 8 facts; retract one first.`,
      },
      {
        value: { facts: {}, session_id: open, domain: 'auth' },
        code: 'VALIDATION_ERROR',
        detail: "domain must be absent when session_id is given: a session evaluates its ruleset's domain",
      },
      { value: { facts: { type: 'purchase', amount: 1 }, session_id: full, fact_id: 'full-0' } },
      { value: { facts: { type: 'login_failed' }, session_id: open, fact_id: 'g2' } },
    ];
    const before = harness.reader.on(harness.topics.results).length;
    const messages: Message[] = cases.map((entry, index) => ({
      key: 'mixed-errors',
      value: JSON.stringify(entry.value),
      headers: { case: String(index) },
    }));
    await produce(harness.kafka, harness.topics.facts, messages);
    const bad = cases.filter((entry) => entry.code !== undefined);
    const deadLetters = await harness.reader.waitFor(harness.topics.dlq, bad.length);
    const results = (await harness.reader.waitFor(harness.topics.results, before + cases.length - bad.length)).slice(before);

    expect(results.map((message) => message.headers.case)).toEqual(['0', '6', '7']);
    expect(results.map((message) => parse<SessionResultMessage>(message).fact_count)).toEqual([1, 8, 2]);
    expect(parse<SessionResultMessage>(results[1]!)).toMatchObject({ replaced: true, fired_rules: [rules.receipt] });
    expect(deadLetters.map((message) => message.headers.case)).toEqual(['1', '2', '3', '4', '5']);
    for (const message of deadLetters) {
      const entry = cases[Number(message.headers.case)]!;
      expect(message.headers.error_code).toBe(entry.code);
      if (entry.detail !== undefined) expect(message.headers.error_detail).toBe(entry.detail);
      expect(String(message.value)).toBe(JSON.stringify(entry.value));
      expect(String(message.key)).toBe('mixed-errors');
    }
    expect(await eventually(async () => (await harness.service.pipeline.lag()) === 0)).toBe(true);
  });

  it('reports working_memory_size and node_memory.hit_rate from the session writes', () => {
    const snapshot = harness.service.engineMetrics.snapshot();
    expect(snapshot.working_memory_size).toBeGreaterThanOrEqual(8);
    expect(snapshot.node_memory.hit_rate).toBeGreaterThan(0);
    expect(snapshot.node_memory.hit_rate).toBeLessThan(1);
  });

  itAnswersEachInputOnce(() => harness);
});

describe('Kafka sessions: KAFKA_STREAMING', () => {
  let harness: Harness;
  let lock: number;

  beforeAll(async () => {
    harness = await startHarness('streaming', { streaming: true });
    lock = await createRule(harness.service.app, 'lock', 'auth', LOCK, 'lock_account');
  });

  afterAll(() => stopHarness(harness));

  it('publishes a message only when a key session activates or deactivates a rule', async () => {
    const failed = { type: 'login_failed' };
    const sequence: [string | null, Record<string, unknown>][] = [
      ['user-1', { facts: failed, domain: 'auth' }],
      ['user-2', { facts: failed, domain: 'auth' }],
      ['user-1', { facts: failed, domain: 'auth' }],
      [null, { facts: failed, domain: 'auth' }],
      ['user-1', { facts: failed, domain: 'auth' }],
      ['user-2', { facts: failed, domain: 'auth' }],
      ['user-1', { facts: failed, domain: 'auth' }],
      ['user-1', { facts: failed }],
      ['user-1', { facts: failed, domain: 'auth' }],
      ['user-1', { facts: { type: 'login_ok' }, domain: 'auth' }],
      ['user-1', { facts: failed, domain: 'auth' }],
    ];
    // One partition, so the keyless message has a place in the order too.
    await produce(
      harness.kafka,
      harness.topics.facts,
      sequence.map(([key, value], index) => ({ key, value: JSON.stringify(value), headers: { step: String(index) }, partition: 0 })),
    );
    const deadLetters = await harness.reader.waitFor(harness.topics.dlq, 2);
    const results = await harness.reader.waitFor(harness.topics.results, 3);
    // Nothing else arrives: the writes that changed nothing published nothing.
    expect(await eventually(async () => (await harness.service.pipeline.lag()) === 0)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(harness.reader.on(harness.topics.results)).toHaveLength(3);

    expect(results.map((message) => [String(message.key), message.headers.step])).toEqual([
      ['user-1', '4'],
      ['user-1', '9'],
      ['user-1', '10'],
    ]);
    const bodies = results.map((message) => parse<SessionResultMessage>(message));
    expect(bodies.map((body) => [body.activated, body.deactivated, body.fired_rules, body.fact_count])).toEqual([
      [[lock], [], [lock], 3],
      [[], [lock], [], 6],
      [[lock], [], [lock], 7],
    ]);
    expect(bodies[0]!).toMatchObject({
      session_id: 'stream:auth:user-1',
      fact_id: `kafka:${harness.topics.facts}:0:4`,
      actions: ['lock_account'],
      replaced: false,
      source: { topic: harness.topics.facts, partition: 0, offset: '4' },
    });
    // Dead letters keep their input's key; a keyless one may land on any partition of the DLQ topic, so order by step.
    const deadLetterSummary = deadLetters
      .map((message) => [message.headers.step, message.headers.error_code, message.headers.error_detail])
      .sort((a, b) => Number(a[0]) - Number(b[0]));
    expect(deadLetterSummary).toEqual([
      ['3', 'VALIDATION_ERROR', 'streaming mode needs a message key: each key is a session'],
      ['7', 'VALIDATION_ERROR', "streaming mode needs a domain: a key's session evaluates one domain's rules"],
    ]);
    expect(harness.service.pipeline.state().streaming).toBe(true);

    // The key's session is an ordinary session: it can be read over HTTP.
    const session = await harness.service.app.inject({ method: 'GET', url: '/api/v1/sessions/stream:auth:user-1' });
    expect(session.statusCode).toBe(200);
    expect(session.json()).toMatchObject({ ruleset_id: null, domain: 'auth', fact_count: 7, active_rules: [lock] });
  });

  it('counts node-memory hits as the writes that published nothing, and working memory as the facts the key sessions hold', async () => {
    // 9 writes (7 for user-1, 2 for user-2), 3 of them changed the fired set; a rebalance would count replayed writes too.
    const snapshot = harness.service.engineMetrics.snapshot();
    expect(snapshot.working_memory_size).toBe(9);
    const metrics = new ServiceMetrics({ engineMetrics: harness.service.engineMetrics });
    const text = await metrics.text();
    expect(text).toMatch(/^rules_engine_working_memory_size 9$/m);
    if (rebalanced(harness)) return;
    expect(snapshot.node_memory.hit_rate).toBeCloseTo(6 / 9, 10);
    expect(text).toMatch(/^rules_engine_node_memory_hit_rate 0\.666/m);
  });

  it('publishes again, after a crash between the session writes and the commit, the activation the first owner caused', async () => {
    const { facts } = harness.topics;
    const failed = { type: 'login_failed' };
    // The offsets the next three messages of partition 0 get, hence their fact ids (they carry none).
    const next = Number((await harness.admin.fetchTopicOffsets(facts)).find((p) => p.partition === 0)!.offset);
    const offsets = [next, next + 1, next + 2];
    // The first owner applied the three writes through the use case, then crashed before committing their results.
    const firstOwner = [];
    for (const offset of offsets) {
      firstOwner.push(await harness.service.sessions.addFactToImplicitSession('user-crash', 'auth', `kafka:${facts}:0:${offset}`, failed));
    }
    expect(firstOwner.map((result) => [result.activated, result.fact_count])).toEqual([
      [[], 1],
      [[], 2],
      [[lock], 3],
    ]);
    const before = harness.reader.on(harness.topics.results).length;

    // The next owner reads the same uncommitted messages again.
    await produce(
      harness.kafka,
      facts,
      offsets.map((_, index) => ({
        key: 'user-crash',
        value: JSON.stringify({ facts: failed, domain: 'auth' }),
        headers: { step: `crash-${index}` },
        partition: 0,
      })),
    );
    const results = (await harness.reader.waitFor(harness.topics.results, before + 1)).slice(before);
    expect(await eventually(async () => (await harness.service.pipeline.lag()) === 0)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 500));
    // Only the write that changed the fired set publishes, as it did for the first owner; the others stay silent.
    expect(harness.reader.on(harness.topics.results).slice(before)).toHaveLength(1);
    expect(results[0]!.headers.step).toBe('crash-2');
    expect(parse<SessionResultMessage>(results[0]!)).toMatchObject({
      session_id: 'stream:auth:user-crash',
      fact_id: `kafka:${facts}:0:${next + 2}`,
      activated: [lock],
      deactivated: [],
      fired_rules: [lock],
      fact_count: 3,
      replaced: false,
      duplicate: true,
      source: { topic: facts, partition: 0, offset: String(next + 2) },
    });
    // Nothing was applied twice.
    const session = await harness.service.sessions.get('stream:auth:user-crash');
    expect(session).toMatchObject({ fact_count: 3, version: 3, active_rules: [lock] });
  });

  itAnswersEachInputOnce(() => harness);
});

/** An append-only file, so a killed and restarted server still holds the sessions. */
const APPEND_ONLY = (dir: string): string[] => ['--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir];

describe('Kafka sessions: KAFKA_STREAMING on a key whose session is full', () => {
  let harness: Harness;
  let lock: number;

  beforeAll(async () => {
    harness = await startHarness('streaming-full', { streaming: true, sessionMaxFacts: 3 });
    lock = await createRule(harness.service.app, 'lock', 'auth', LOCK, 'lock_account');
  });

  afterAll(() => stopHarness(harness));

  it('lets the oldest facts go instead of dead-lettering the stream, so rules on the newest keep firing', async () => {
    const base = Date.now();
    const types = ['login_ok', 'login_ok', 'login_ok', 'login_failed', 'login_failed', 'login_failed'];
    await produce(
      harness.kafka,
      harness.topics.facts,
      types.map((type, index) => ({
        key: 'user-9',
        value: JSON.stringify({ facts: { type, timestamp: base + index }, domain: 'auth' }),
        headers: { step: String(index) },
        partition: 0,
      })),
    );
    const results = await harness.reader.waitFor(harness.topics.results, 1);
    expect(await eventually(async () => (await harness.service.pipeline.lag()) === 0)).toBe(true);
    expect(harness.reader.on(harness.topics.dlq)).toHaveLength(0);
    expect(results.map((message) => message.headers.step)).toEqual(['5']);
    expect(parse<SessionResultMessage>(results[0]!)).toMatchObject({ activated: [lock], fired_rules: [lock], fact_count: 3 });
    const session = await harness.service.app.inject({ method: 'GET', url: '/api/v1/sessions/stream:auth:user-9' });
    expect(session.json()).toMatchObject({ fact_count: 3, active_rules: [lock] });
  });

  it('answers a run sent again (a replay after a crash) as duplicates, facts let go included, reporting the first changes', async () => {
    const base = Date.now();
    const types = ['login_failed', 'login_failed', 'login_failed', 'login_ok', 'login_ok', 'login_ok'];
    const run = types.map((type, index) => ({
      key: 'user-10',
      value: JSON.stringify({ facts: { type, timestamp: base + index }, domain: 'auth', fact_id: `m-${index}` }),
      headers: { step: String(index) },
      partition: 0,
    }));
    // First pass: the third failure locks (m-2), the first ok unlocks (m-3); the oks let the failures go.
    await produce(harness.kafka, harness.topics.facts, run);
    const first = await harness.reader.waitFor(harness.topics.results, 3);
    const ours = (messages: typeof first) =>
      messages.map((message) => parse<SessionResultMessage>(message)).filter((result) => result.session_id === 'stream:auth:user-10');
    expect(ours(first).map(({ fact_id, activated, deactivated, duplicate }) => ({ fact_id, activated, deactivated, duplicate }))).toEqual([
      { fact_id: 'm-2', activated: [lock], deactivated: [], duplicate: false },
      { fact_id: 'm-3', activated: [], deactivated: [lock], duplicate: false },
    ]);
    const before = (await harness.service.app.inject({ method: 'GET', url: '/api/v1/sessions/stream:auth:user-10' })).json();
    // The same run again, as the next owner reads it after a crash: m-0..m-2 were let go meanwhile.
    await produce(harness.kafka, harness.topics.facts, run);
    expect(await eventually(async () => (await harness.service.pipeline.lag()) === 0)).toBe(true);
    const again = ours(await harness.reader.waitFor(harness.topics.results, 5)).slice(2);
    expect(again.map(({ fact_id, activated, deactivated, duplicate }) => ({ fact_id, activated, deactivated, duplicate }))).toEqual([
      { fact_id: 'm-2', activated: [lock], deactivated: [], duplicate: true },
      { fact_id: 'm-3', activated: [], deactivated: [lock], duplicate: true },
    ]);
    const after = (await harness.service.app.inject({ method: 'GET', url: '/api/v1/sessions/stream:auth:user-10' })).json();
    expect(after).toMatchObject({ version: before.version, facts: before.facts, active_rules: [] });
  });
});

describe('Kafka sessions: Redis outage', () => {
  let harness: Harness;
  let redis: ChildProcess | undefined;
  let port: number;
  let dir: string;

  beforeAll(async () => {
    port = await freePort();
    dir = await mkdtemp(join(tmpdir(), 'kafka-sessions-redis-'));
    redis = await startRedisServer(port, APPEND_ONLY(dir));
    harness = await startHarness('outage', { redisUrl: `redis://127.0.0.1:${port}`, partitions: 1 });
    await createRule(harness.service.app, 'lock', 'auth', LOCK, 'lock_account');
  });

  afterAll(async () => {
    await stopHarness(harness);
    await killRedisServer(redis);
    await rm(dir, { recursive: true, force: true });
  });

  it('pauses while Redis is down, then gives every input exactly its result, in order, none dead-lettered', async () => {
    const session = await createSession(harness.service.app, 'auth');
    const fact = (index: number): Message => ({
      key: session,
      value: JSON.stringify({ facts: { type: index % 4 === 3 ? 'login_ok' : 'login_failed' }, session_id: session }),
      headers: { step: String(index) },
    });
    await produce(harness.kafka, harness.topics.facts, [0, 1, 2, 3, 4].map(fact));
    await harness.reader.waitFor(harness.topics.results, 5);

    await killRedisServer(redis);
    await produce(harness.kafka, harness.topics.facts, [5, 6, 7, 8, 9].map(fact));
    expect(await eventually(() => harness.service.pipeline.state().backing_off_partitions.length > 0)).toBe(true);
    expect(harness.service.pipeline.state().last_error).toMatch(/Session store \(Redis\) is unavailable/);
    // Nothing after the outage is answered or committed while Redis is away.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(harness.reader.on(harness.topics.results)).toHaveLength(5);
    expect(await harness.service.pipeline.lag()).toBe(5);

    redis = await startRedisServer(port, APPEND_ONLY(dir));
    const results = await harness.reader.waitFor(harness.topics.results, 10, 60_000);
    expect(await eventually(async () => (await harness.service.pipeline.lag()) === 0)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 500));

    expect(harness.reader.on(harness.topics.results)).toHaveLength(10);
    expect(harness.reader.on(harness.topics.dlq)).toEqual([]);
    const bodies = results.map((message) => parse<SessionResultMessage>(message));
    expect(results.map((message) => message.headers.step)).toEqual(['0', '1', '2', '3', '4', '5', '6', '7', '8', '9']);
    expect(bodies.map((body) => body.source.offset)).toEqual(['0', '1', '2', '3', '4', '5', '6', '7', '8', '9']);
    // Nothing lost, nothing counted twice: one fact per input.
    expect(bodies.map((body) => body.fact_count)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    const stored = await harness.service.sessions.get(session);
    expect(stored.fact_count).toBe(10);
  });

  itAnswersEachInputOnce(() => harness);
});

describe('Kafka sessions: a run slower than the consumer session timeout', () => {
  let harness: Harness;
  let proxy: TcpProxy;
  // One session written 800 times in a row, each round trip held back 15 ms: one run takes over 12 s, past the
  // consumer's 10 s session timeout, so the group keeps this instance only if heartbeats go on during the run.
  const FACTS = 800;

  beforeAll(async () => {
    proxy = await startTcpProxy(resources.redisUrl);
    harness = await startHarness('slow-run', { redisUrl: proxy.url, partitions: 1 });
    await createRule(harness.service.app, 'lock', 'auth', LOCK, 'lock_account');
  });

  afterAll(async () => {
    await stopHarness(harness);
    proxy.close();
  });

  it('keeps its place in the group and answers every fact once, in order', { timeout: 120_000 }, async () => {
    const session = await createSession(harness.service.app, 'auth');
    proxy.delayReplies(15);
    const facts = Array.from({ length: FACTS }, (_, index) => ({
      key: session,
      value: JSON.stringify({ facts: { type: 'login_failed', n: index }, session_id: session }),
    }));
    const started = Date.now();
    await produce(harness.kafka, harness.topics.facts, facts);
    const results = await harness.reader.waitFor(harness.topics.results, FACTS, 60_000);
    expect(Date.now() - started).toBeGreaterThan(10_000);
    // The run's offsets are committed by the member that processed it: evicted meanwhile, its commit would fail,
    // the group would rebalance and the run be answered again.
    expect(await eventually(async () => (await harness.service.pipeline.lag()) === 0, 40_000)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(harness.service.pipeline.state().group_joins).toBe(1);
    expect(harness.reader.repeats()).toBe(0);
    expect(results.map((message) => parse<SessionResultMessage>(message).fact_count)).toEqual(
      Array.from({ length: FACTS }, (_, index) => index + 1),
    );
  });
});
