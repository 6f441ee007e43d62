// A consumer crash kafkajs will not restart (a broker restart's "no group coordinator", a TypeError in a handler) must
// not stop consumption for good: the facts consumer starts itself again and answers every fact.
import type { Admin, Kafka } from 'kafkajs';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResultMessage } from '../../../src/contracts/kafka-messages.ts';
import { BatchProcessor } from '../../../src/kafka/batch-processor.ts';
import { FactConsumer } from '../../../src/kafka/fact-consumer.ts';
import { AtLeastOnceOutput } from '../../../src/kafka/result-output.ts';
import { collect, deleteTestTopics, distinctAnswers, eventually, parse, produce, testKafka, uniqueTopics } from './support.ts';

describe('Kafka pipeline: a consumer crash kafkajs leaves stopped', () => {
  const topics = uniqueTopics('crash-restart');
  let kafka: Kafka;
  let admin: Admin;
  let output: AtLeastOnceOutput;
  let consumer: FactConsumer;
  let crashes = 0;

  beforeAll(async () => {
    kafka = testKafka();
    admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({
      topics: [topics.facts, topics.results, topics.dlq].map((topic) => ({ topic, numPartitions: 1 })),
      waitForLeaders: true,
    });
    output = await AtLeastOnceOutput.open(kafka, { resultsTopic: topics.results, dlqTopic: topics.dlq });
    let evaluations = 0;
    const processor = new BatchProcessor({
      decoder: undefined,
      evaluate: (fact) => ({
        execution_id: `e-${++evaluations}`,
        fired_rules: [],
        actions: [],
        latency_ms: 0,
        domain: fact.domain ?? null,
        revision: 1,
      }),
      maxUnexpectedAttempts: 3,
    });
    // The first batch meets a TypeError outside any per-message handling: kafkajs counts it unrecoverable.
    const process = processor.process.bind(processor);
    processor.process = (...args) => {
      if (crashes === 0) {
        crashes += 1;
        throw new TypeError('injected crash');
      }
      return process(...args);
    };
    consumer = new FactConsumer({
      kafka,
      groupId: topics.group,
      topic: topics.facts,
      processor,
      output,
      logger: pino({ level: 'silent' }),
      maxRunSize: 1_000,
      partitionsConsumedConcurrently: 1,
      backoff: { initialMs: 100, maxMs: 1_000 },
    });
    await consumer.start();
  });

  afterAll(async () => {
    await consumer?.stop();
    await output?.close();
    if (admin !== undefined) {
      await deleteTestTopics(admin, topics);
      await admin.disconnect();
    }
  });

  it('starts the consumer again and answers every fact, the one in hand at the crash included', async () => {
    await produce(
      kafka,
      topics.facts,
      [1, 2, 3].map((n) => ({ key: `k-${n}`, value: JSON.stringify({ facts: { n } }) })),
    );
    const received = await collect(kafka, [topics.results], (all) => distinctAnswers(all) >= 3, { groupPrefix: topics.group });
    expect(crashes).toBe(1);
    expect(received.map((message) => parse<ResultMessage>(message).source.offset).sort()).toEqual(['0', '1', '2']);
    expect(await eventually(() => consumer.state().status === 'running', 10_000)).toBe(true);
    expect(consumer.state().group_joins).toBeGreaterThanOrEqual(2);
    expect(consumer.state().last_error).toMatch(/injected crash/);
  });
});
