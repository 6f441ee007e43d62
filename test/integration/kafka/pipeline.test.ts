// Facts in, results out on a real broker: every fact gets a result (one, unless a rebalance replayed its run) equal to
// what POST /api/v1/evaluate answers.
import type { FastifyInstance } from 'fastify';
import kafkajs, { type Admin, type Kafka, type Message } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResultMessage } from '../../../src/contracts/kafka-messages.ts';
import {
  answeredPosition,
  collect,
  distinctAnswers,
  eventually,
  expectAnsweredAtLeastOnce,
  firstAnswers,
  type InProcessService,
  kafkaConfig,
  mayHaveReplayed,
  parse,
  produce,
  type Received,
  startInProcessService,
  stopKafkaTest,
  testKafka,
  uniqueTopics,
} from './support.ts';

const { CompressionTypes } = kafkajs;

const N = 300;
const KEYS = 12;

async function post(app: FastifyInstance, url: string, body: unknown) {
  return app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body) });
}

function fact(index: number): { facts: Record<string, unknown>; domain?: string } {
  const facts = {
    amount: (index * 37) % 2_000,
    country: ['US', 'FR', 'DE'][index % 3],
    customer: { tier: index % 5 === 0 ? 'gold' : 'basic' },
  };
  // A third name the payments domain, a third another domain, a third none (every domain). Session facts: sessions.test.ts.
  if (index % 3 === 0) return { facts, domain: 'payments' };
  if (index % 3 === 1) return { facts, domain: 'shipping' };
  return { facts };
}

describe('Kafka pipeline: facts to results', () => {
  const topics = uniqueTopics('pipeline');
  let kafka: Kafka;
  let admin: Admin;
  let service: InProcessService;
  let received: Received[];
  let results: Received[];
  const inputs: Message[] = [];

  beforeAll(async () => {
    kafka = testKafka();
    admin = kafka.admin();
    await admin.connect();
    service = await startInProcessService(kafkaConfig(topics), { changelogTopic: topics.changelog });
    const rules = [
      { name: 'big', domain: 'payments', condition_dsl: { type: 'condition', field: 'amount', op: '>', value: 1_000 }, action: 'review' },
      {
        name: 'gold',
        domain: 'payments',
        condition_dsl: { type: 'condition', field: 'customer.tier', op: '==', value: 'gold' },
        action: 'fast_track',
        priority: 5,
      },
      {
        name: 'abroad',
        domain: 'shipping',
        condition_dsl: { type: 'condition', field: 'country', op: '!=', value: 'US' },
        action: 'customs',
      },
    ];
    for (const rule of rules) expect((await post(service.app, '/api/v1/rules', rule)).statusCode).toBe(201);

    for (let index = 0; index < N; index++) {
      inputs.push({
        key: `customer-${index % KEYS}`,
        value: JSON.stringify(fact(index)),
        headers: {
          traceparent: `00-${String(index).padStart(32, '0')}-00f067aa0ba902b7-01`,
          'correlation-id': `corr-${index}`,
          'x-tenant': 'acme',
          // A header named like an Object.prototype member once made every produce of its partition fail.
          ...(index % 5 === 0 ? { toString: `ts-${index}` } : {}),
        },
      });
    }
    await produce(kafka, topics.facts, inputs);
    received = await collect(kafka, [topics.results], (all) => distinctAnswers(all) >= N, {
      groupPrefix: topics.group,
      settleMs: 500,
    });
    // At-least-once: a rebalance at a bad moment answers a run again; the tests below look at each fact's first answer.
    results = firstAnswers(received);
  });

  afterAll(() => stopKafkaTest(service, admin, topics));

  it('answers every fact, once unless the consumer rejoined its group or retried a delivery', () => {
    expect(service.pipeline.state().group_joins).toBeGreaterThanOrEqual(1);
    expectAnsweredAtLeastOnce(received, N, mayHaveReplayed(service.pipeline.state()));
  });

  it('gives the same fired rules, actions and revision as POST /api/v1/evaluate for the same fact and domain', async () => {
    const byCorrelation = new Map(inputs.map((_input, index) => [`corr-${index}`, index]));
    let firing = 0;
    for (const message of results) {
      const result = parse<ResultMessage>(message);
      const index = byCorrelation.get(message.headers['correlation-id']!)!;
      const { facts, domain } = fact(index);
      const http = (await post(service.app, '/api/v1/evaluate', domain === undefined ? { facts } : { facts, domain })).json();
      expect({ fired_rules: result.fired_rules, actions: result.actions, revision: result.revision }).toEqual({
        fired_rules: http.fired_rules,
        actions: http.actions,
        revision: http.revision,
      });
      expect(result.domain).toBe(domain ?? null);
      if (result.fired_rules.length > 0) firing += 1;
    }
    // The comparison means something only if rules did fire.
    expect(firing).toBeGreaterThan(N / 4);
  });

  it('keeps the input key and carries trace, correlation and custom headers', () => {
    for (const message of results) {
      const index = Number(message.headers['correlation-id']!.slice('corr-'.length));
      expect(String(message.key)).toBe(`customer-${index % KEYS}`);
      expect(message.headers.traceparent).toBe(`00-${String(index).padStart(32, '0')}-00f067aa0ba902b7-01`);
      expect(message.headers['x-tenant']).toBe('acme');
      expect(message.headers['content-type']).toBe('application/json');
      expect(Object.hasOwn(message.headers, 'toString') ? message.headers.toString : undefined).toBe(
        index % 5 === 0 ? `ts-${index}` : undefined,
      );
    }
  });

  it('publishes the results of one key in input order', () => {
    const sequence = new Map<string, number[]>();
    for (const message of results) {
      const index = Number(message.headers['correlation-id']!.slice('corr-'.length));
      const key = String(message.key);
      sequence.set(key, [...(sequence.get(key) ?? []), index]);
    }
    expect(sequence.size).toBe(KEYS);
    for (const indexes of sequence.values()) expect(indexes).toEqual([...indexes].sort((a, b) => a - b));
  });

  it('records each evaluation as an execution with source kafka, its facts read back from the message as sent', async () => {
    for (const message of results.slice(0, 20)) {
      const result = parse<ResultMessage>(message);
      const { facts, domain } = fact(Number(message.headers['correlation-id']!.slice('corr-'.length)));
      const response = await service.app.inject({ method: 'GET', url: `/api/v1/executions/${result.execution_id}` });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({
        execution_id: result.execution_id,
        source: 'kafka',
        domain: domain ?? null,
        facts,
        fired_rules: result.fired_rules,
        actions: result.actions,
        latency_ms: result.latency_ms,
        revision: result.revision,
        created_at: expect.any(String),
      });
    }
  });

  it('reports a ready consumer owning every partition, and no lag once all is answered', async () => {
    expect(service.pipeline.state()).toMatchObject({
      status: 'running',
      ready: true,
      mode: 'at-least-once',
      group_id: topics.group,
      topic: topics.facts,
      assigned_partitions: [0, 1, 2],
    });
    expect(await eventually(async () => (await service.pipeline.lag()) === 0)).toBe(true);
  });

  it('answers facts from a transactional upstream producer and commits past its commit marker: no lag left', async () => {
    const producer = kafka.producer({ transactionalId: `upstream-${topics.group}`, idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    try {
      const transaction = await producer.transaction();
      await transaction.send({
        topic: topics.facts,
        messages: [0, 1, 2].map((n) => ({ key: 'upstream', value: JSON.stringify(fact(n)) })),
      });
      await transaction.commit();
    } finally {
      await producer.disconnect();
    }
    const answered = await collect(
      kafka,
      [topics.results],
      (all) => all.filter((message) => message.key?.toString() === 'upstream').length >= 3,
      {
        groupPrefix: topics.group,
      },
    );
    expect(answered.filter((message) => message.key?.toString() === 'upstream')).toHaveLength(3);
    // The marker sits after the three facts on their partition: a position short of it would leave a lag of 1 for good.
    expect(await eventually(async () => (await service.pipeline.lag()) === 0, 10_000)).toBe(true);
  });

  it('answers facts whose producers compress their batches with snappy, lz4 or zstd, as Java producers often do', async () => {
    const codecs = [
      ['snappy', CompressionTypes.Snappy],
      ['lz4', CompressionTypes.LZ4],
      ['zstd', CompressionTypes.ZSTD],
    ] as const;
    const producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    try {
      for (const [name, compression] of codecs) {
        const messages = [0, 1, 2].map((n) => ({ key: `compressed-${name}`, value: JSON.stringify(fact(n)) }));
        await producer.send({ topic: topics.facts, acks: -1, compression, messages });
      }
    } finally {
      await producer.disconnect();
    }
    const compressed = (all: readonly Received[]) => all.filter((message) => message.key?.toString().startsWith('compressed-'));
    const answered = compressed(
      await collect(kafka, [topics.results], (all) => compressed(all).length >= 9, { groupPrefix: topics.group }),
    );
    expect(answered.map((message) => message.key?.toString()).sort()).toEqual(
      codecs.flatMap(([name]) => Array(3).fill(`compressed-${name}`)).sort(),
    );
    // A batch kafkajs could not read would stop its partition for good: every partition is read to its end.
    expect(await eventually(async () => (await service.pipeline.lag()) === 0, 10_000)).toBe(true);
  });
});

describe('Kafka pipeline with KAFKA_RECORD_EXECUTIONS=false', () => {
  const topics = uniqueTopics('no-record');
  let kafka: Kafka;
  let admin: Admin;
  let service: InProcessService;
  let received: Received[];
  let results: Received[];

  beforeAll(async () => {
    kafka = testKafka();
    admin = kafka.admin();
    await admin.connect();
    service = await startInProcessService(kafkaConfig(topics, { recordExecutions: false }), { changelogTopic: topics.changelog });
    // Facts 9..19 without a domain have amounts above 300 (see fact()).
    const rule = { name: 'big', condition_dsl: { type: 'condition', field: 'amount', op: '>', value: 300 }, action: 'review' };
    expect((await post(service.app, '/api/v1/rules', rule)).statusCode).toBe(201);
    const inputs = Array.from({ length: 20 }, (_, index) => ({ key: `k-${index % 3}`, value: JSON.stringify(fact(index)) }));
    await produce(kafka, topics.facts, inputs);
    received = await collect(kafka, [topics.results], (all) => distinctAnswers(all) >= inputs.length, {
      groupPrefix: topics.group,
      settleMs: 500,
    });
    results = firstAnswers(received);
  });

  afterAll(() => stopKafkaTest(service, admin, topics));

  it('still answers every fact, with a unique execution id that no execution record stands behind', async () => {
    expectAnsweredAtLeastOnce(received, 20, mayHaveReplayed(service.pipeline.state()));
    // Every input has execution ids of its own (a run sent again after a failed delivery repeats its ids).
    const positions = new Map<string, string>();
    for (const message of received) {
      const id = parse<ResultMessage>(message).execution_id;
      expect(positions.get(id) ?? answeredPosition(message), id).toBe(answeredPosition(message));
      positions.set(id, answeredPosition(message));
    }
    expect(positions.size).toBeGreaterThanOrEqual(20);
    const parsed = results.map((message) => parse<ResultMessage>(message));
    expect(parsed.filter((result) => result.fired_rules.length > 0).length).toBeGreaterThan(0);
    for (const result of parsed.slice(0, 5)) {
      const response = await service.app.inject({ method: 'GET', url: `/api/v1/executions/${result.execution_id}` });
      expect(response.statusCode).toBe(404);
      expect(response.json()).toMatchObject({ error_code: 'NOT_FOUND' });
    }
  });

  it('still records what HTTP evaluates', async () => {
    const response = await post(service.app, '/api/v1/evaluate', { facts: { amount: 5_000 } });
    expect(response.statusCode).toBe(200);
    const found = await service.app.inject({ method: 'GET', url: `/api/v1/executions/${response.json().execution_id}` });
    expect(found.statusCode).toBe(200);
  });
});
