// While the execution store falls behind, the pipeline stops taking new facts instead of piling records up in memory.
import type { Admin, Kafka } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResultMessage } from '../../../src/contracts/kafka-messages.ts';
import { createLogger } from '../../../src/logger.ts';
import {
  collect,
  distinctAnswers,
  eventually,
  expectAnsweredAtLeastOnce,
  firstAnswers,
  type InProcessService,
  type InProcessServiceOptions,
  kafkaConfig,
  mayHaveReplayed,
  parse,
  produce,
  startInProcessService,
  stopKafkaTest,
  type TestTopics,
  testKafka,
  uniqueTopics,
} from './support.ts';

const MAX_PENDING = 10;
const BEHIND = 'execution store is behind; consumption waits until it catches up';
const CAUGHT_UP = 'execution store caught up; consumption resumes';

/** A service on the test's topics whose pipeline pauses at `pauseAt` records of the backlog `options` show it. */
async function startPacedService(
  topics: TestTopics,
  pauseAt: number,
  options: Pick<InProcessServiceOptions, 'pendingExecutions' | 'beforeStart' | 'logger'>,
): Promise<{ kafka: Kafka; admin: Admin; service: InProcessService }> {
  const kafka = testKafka();
  const admin = kafka.admin();
  await admin.connect();
  const service = await startInProcessService(kafkaConfig(topics), {
    changelogTopic: topics.changelog,
    tuning: { maxPendingExecutions: pauseAt },
    ...options,
  });
  return { kafka, admin, service };
}

describe('Kafka pipeline: back-pressure from the execution store', () => {
  const topics = uniqueTopics('backpressure');
  let kafka: Kafka;
  let admin: Admin;
  let service: InProcessService;
  // The store's backlog as the pipeline sees it; the test moves it across the limit.
  let backlog = 0;
  const logs: { msg: string; level: string; waits_not_logged?: number }[] = [];
  const logged = (msg: string) => logs.filter((line) => line.msg === msg);

  beforeAll(async () => {
    const logger = createLogger('info', { write: (line: string) => void logs.push(JSON.parse(line)) });
    ({ kafka, admin, service } = await startPacedService(topics, MAX_PENDING, { pendingExecutions: () => backlog, logger }));
    const rule = { name: 'big', condition_dsl: { type: 'condition', field: 'amount', op: '>', value: 100 }, action: 'review' };
    const created = await service.app.inject({
      method: 'POST',
      url: '/api/v1/rules',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify(rule),
    });
    expect(created.statusCode).toBe(201);
    expect(await eventually(() => service.pipeline.state().ready)).toBe(true);
  });

  afterAll(() => stopKafkaTest(service, admin, topics));

  it('evaluates nothing while the backlog is over the limit, then every fact once it drains below half', async () => {
    backlog = MAX_PENDING + 1;
    const inputs = Array.from({ length: 6 }, (_, index) => ({
      key: `k-${index}`,
      value: JSON.stringify({ facts: { amount: 50 * index } }),
    }));
    await produce(kafka, topics.facts, inputs);

    const whileBehind = await collect(kafka, [topics.results], (received) => received.length > 0, {
      groupPrefix: topics.group,
      guardMs: 3_000,
    });
    expect(whileBehind).toEqual([]);
    expect(service.pipeline.state().waiting_for_store).toBe(true);
    expect(service.pipeline.state().ready).toBe(true);

    // Under the limit but above half of it: still waiting, so the store gets room before the next run.
    backlog = MAX_PENDING / 2 + 1;
    const stillBehind = await collect(kafka, [topics.results], (received) => received.length > 0, {
      groupPrefix: topics.group,
      guardMs: 1_500,
    });
    expect(stillBehind).toEqual([]);

    backlog = 0;
    const received = await collect(kafka, [topics.results], (all) => distinctAnswers(all) >= inputs.length, { groupPrefix: topics.group });
    expectAnsweredAtLeastOnce(received, inputs.length, mayHaveReplayed(service.pipeline.state()));
    const results = firstAnswers(received);
    expect(results.map((message) => String(message.key)).sort()).toEqual(inputs.map((input) => input.key).sort());
    expect(results.map((message) => parse<ResultMessage>(message).fired_rules.length).sort()).toEqual([0, 0, 0, 1, 1, 1]);
    expect(service.pipeline.state().waiting_for_store).toBe(false);
    expect(logged(BEHIND).map((line) => line.level)).toEqual(['warn']);
    expect(logged(CAUGHT_UP).map((line) => line.level)).toEqual(['info']);
  });

  it('logs a wait that follows within a minute neither when it starts nor when it ends: at the bound it recurs many times a second', async () => {
    const before = logs.length;
    backlog = MAX_PENDING + 1;
    const inputs = [{ key: 'again', value: JSON.stringify({ facts: { amount: 500 } }) }];
    await produce(kafka, topics.facts, inputs);
    expect(await eventually(() => service.pipeline.state().waiting_for_store)).toBe(true);
    backlog = 0;
    const received = await collect(kafka, [topics.results], (all) => all.some((message) => String(message.key) === 'again'), {
      groupPrefix: topics.group,
    });
    expect(received.some((message) => String(message.key) === 'again')).toBe(true);
    expect(await eventually(() => !service.pipeline.state().waiting_for_store)).toBe(true);
    expect(logs.slice(before).filter((line) => line.msg === BEHIND || line.msg === CAUGHT_UP)).toEqual([]);
  });
});

describe('Kafka pipeline: the execution backlog it pauses at is a bound, whatever the partitions', () => {
  const topics = uniqueTopics('backpressure-bound');
  const PAUSE_AT = 20;
  const FACTS = 90;
  let kafka: Kafka;
  let admin: Admin;
  let service: InProcessService;
  // Records the store took since the test last let it catch up, and the most that were ever waiting at once.
  let recorded = 0;
  let written = 0;
  let mostWaiting = 0;

  beforeAll(async () => {
    ({ kafka, admin, service } = await startPacedService(topics, PAUSE_AT, {
      pendingExecutions: () => recorded - written,
      beforeStart: async (store) => {
        const record = store.executions.record.bind(store.executions);
        store.executions.record = (execution) => {
          recorded += 1;
          mostWaiting = Math.max(mostWaiting, recorded - written);
          record(execution);
        };
      },
    }));
    expect(await eventually(() => service.pipeline.state().ready)).toBe(true);
  });

  afterAll(() => stopKafkaTest(service, admin, topics));

  it('never lets the runs of several partitions together take the backlog past it, and answers every fact', async () => {
    // Keys spread over the topic's 3 partitions, consumed at the same time.
    const inputs = Array.from({ length: FACTS }, (_, index) => ({ key: `k-${index}`, value: JSON.stringify({ facts: { n: index } }) }));
    await produce(kafka, topics.facts, inputs);
    expect(await eventually(() => recorded > 0)).toBe(true);
    // The store takes nothing meanwhile: the consumer must stop at the bound and wait.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(recorded).toBeLessThanOrEqual(PAUSE_AT);
    expect(service.pipeline.state().waiting_for_store).toBe(true);

    const catchUp = setInterval(() => {
      written = recorded;
    }, 100);
    try {
      const received = await collect(kafka, [topics.results], (all) => distinctAnswers(all) >= FACTS, { groupPrefix: topics.group });
      expectAnsweredAtLeastOnce(received, FACTS, mayHaveReplayed(service.pipeline.state()));
    } finally {
      clearInterval(catchUp);
    }
    expect(mostWaiting).toBeLessThanOrEqual(PAUSE_AT);
  });
});
