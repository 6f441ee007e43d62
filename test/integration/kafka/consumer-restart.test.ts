// The facts consumer against a broker that fails: a crash kafkajs will not restart (a broker restart's "no group
// coordinator", a TypeError in a handler) must not stop consumption for good, and a broker that stops answering (a
// network black hole) must show in readiness and must not hold a stop up.
import { connect, type Socket } from 'node:net';
import { type Admin, type Consumer, Kafka, logLevel } from 'kafkajs';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResultMessage } from '../../../src/contracts/kafka-messages.ts';
import { BatchProcessor } from '../../../src/kafka/batch-processor.ts';
import { consumerReady, FactConsumer } from '../../../src/kafka/fact-consumer.ts';
import { AtLeastOnceOutput } from '../../../src/kafka/result-output.ts';
import {
  collect,
  deleteTestTopics,
  distinctAnswers,
  eventually,
  parse,
  produce,
  type TestTopics,
  testBrokers,
  testKafka,
  uniqueTopics,
} from './support.ts';

const evaluate = (fact: { domain?: string | null }) => ({
  execution_id: 'e',
  fired_rules: [],
  actions: [],
  latency_ms: 0,
  domain: fact.domain ?? null,
  revision: 1,
});

/** The facts consumer as the pipeline builds it, with a silent logger and short back-off. */
function testConsumer(kafka: Kafka, groupId: string, topic: string, processor: BatchProcessor, output: AtLeastOnceOutput): FactConsumer {
  const logger = pino({ level: 'silent' });
  const backoff = { initialMs: 100, maxMs: 1_000 };
  return new FactConsumer({
    kafka,
    groupId,
    topic,
    processor,
    output,
    logger,
    maxRunSize: 1_000,
    partitionsConsumedConcurrently: 1,
    backoff,
  });
}

async function createTopics(admin: Admin, topics: TestTopics): Promise<void> {
  await admin.createTopics({
    topics: [topics.facts, topics.results, topics.dlq].map((topic) => ({ topic, numPartitions: 1 })),
    waitForLeaders: true,
  });
}

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
    await createTopics(admin, topics);
    output = await AtLeastOnceOutput.open(kafka, { resultsTopic: topics.results, dlqTopic: topics.dlq });
    const processor = new BatchProcessor({ decoder: undefined, evaluate, maxUnexpectedAttempts: 3 });
    // The first batch meets a TypeError outside any per-message handling: kafkajs counts it unrecoverable.
    const process = processor.process.bind(processor);
    processor.process = (...args) => {
      if (crashes === 0) {
        crashes += 1;
        throw new TypeError('injected crash');
      }
      return process(...args);
    };
    consumer = testConsumer(kafka, topics.group, topics.facts, processor, output);
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

describe('Kafka pipeline: a broker that stops answering', () => {
  const topics = uniqueTopics('silent-broker');
  // Every connection to the broker goes through here, so the test can stop reading them all: requests leave, no answer arrives.
  const sockets = new Set<Socket>();
  let silent = false;
  const kafka = new Kafka({
    clientId: 'silent-broker-tests',
    brokers: testBrokers(),
    logLevel: logLevel.NOTHING,
    socketFactory: ({ host, port, onConnect }) => {
      const socket = connect({ host, port }, onConnect);
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
      if (silent) socket.pause();
      return socket;
    },
  });
  const setSilent = (value: boolean) => {
    silent = value;
    for (const socket of sockets)
      if (value) socket.pause();
      else socket.resume();
  };
  let admin: Admin;
  let output: AtLeastOnceOutput;
  let consumer: FactConsumer;

  beforeAll(async () => {
    admin = testKafka().admin();
    await admin.connect();
    await createTopics(admin, topics);
    output = await AtLeastOnceOutput.open(kafka, { resultsTopic: topics.results, dlqTopic: topics.dlq });
    consumer = testConsumer(
      kafka,
      topics.group,
      topics.facts,
      new BatchProcessor({ decoder: undefined, evaluate, maxUnexpectedAttempts: 3 }),
      output,
    );
    await consumer.start();
  });

  afterAll(async () => {
    setSilent(false);
    for (const socket of sockets) socket.destroy();
    await output?.close().catch(() => undefined);
    if (admin !== undefined) {
      await deleteTestTopics(admin, topics);
      await admin.disconnect();
    }
  });

  it('is not ready once the broker has been silent for a consumer session, and ready again when it answers', async () => {
    expect(await eventually(() => consumerReady(consumer.state()), 20_000)).toBe(true);
    setSilent(true);
    expect(await eventually(() => !consumerReady(consumer.state()), 20_000)).toBe(true);
    // kafkajs itself has noticed nothing: only the silence tells.
    expect(consumer.state().status).toBe('running');
    expect(consumer.state().ms_since_heartbeat).toBeGreaterThanOrEqual(10_000);
    setSilent(false);
    expect(await eventually(() => consumerReady(consumer.state()), 30_000)).toBe(true);
  });

  it('stops without waiting for a silent broker to let it leave the group', async () => {
    setSilent(true);
    let stopped = false;
    const stopping = consumer.stop().then((left) => {
      stopped = true;
      return left;
    });
    // A stop waiting on the broker would wait for kafkajs's 30 s request timeout and more.
    expect(await eventually(() => stopped, 15_000)).toBe(true);
    // It says it could not leave, so the pipeline's other disconnects barely wait.
    expect(await stopping).toBe(false);
    expect(consumer.state().status).toBe('stopped');
  });

  it('stops without waiting for a restart whose connect the silent broker never answers', async () => {
    setSilent(false);
    const processor = new BatchProcessor({ decoder: undefined, evaluate, maxUnexpectedAttempts: 3 });
    processor.process = () => {
      throw new TypeError('injected crash');
    };
    // Once kafkajs has given the consumer up, the broker falls silent: the restart that follows cannot connect.
    let crashed = false;
    const client = Object.create(kafka) as Kafka;
    client.consumer = (config) => {
      const inner = kafka.consumer(config);
      inner.on(inner.events.CRASH, () => {
        crashed = true;
        setSilent(true);
      });
      return inner;
    };
    const restarting = testConsumer(client, `${topics.group}-restart`, topics.facts, processor, output);
    await restarting.start();
    await produce(testKafka(), topics.facts, [{ key: 'a', value: JSON.stringify({ facts: { n: 1 } }) }]);
    expect(await eventually(() => crashed, 20_000)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    let stopped = false;
    const stopping = restarting.stop().then(() => {
      stopped = true;
    });
    // A stop waiting on the restart would wait for kafkajs's 30 s request timeout on its connect.
    expect(await eventually(() => stopped, 15_000)).toBe(true);
    await stopping;
  });
});

describe('Kafka pipeline: a stop while the consumer restarts after a crash', () => {
  const topics = uniqueTopics('stop-restart');
  const kafka = testKafka();
  let admin: Admin;
  let output: AtLeastOnceOutput;

  beforeAll(async () => {
    admin = kafka.admin();
    await admin.connect();
    await createTopics(admin, topics);
    output = await AtLeastOnceOutput.open(kafka, { resultsTopic: topics.results, dlqTopic: topics.dlq });
  });

  afterAll(async () => {
    await output?.close().catch(() => undefined);
    if (admin !== undefined) {
      await deleteTestTopics(admin, topics);
      await admin.disconnect();
    }
  });

  it('leaves the group and handles nothing more once stopped, even when the restart joins during the stop', async () => {
    const processor = new BatchProcessor({ decoder: undefined, evaluate, maxUnexpectedAttempts: 3 });
    const process = processor.process.bind(processor);
    let stopped = false;
    let handledAfterStop = 0;
    let crashed = false;
    processor.process = (...args) => {
      if (stopped) handledAfterStop += 1;
      if (!crashed) {
        crashed = true;
        throw new TypeError('injected crash');
      }
      return process(...args);
    };
    // The kafkajs consumer inside, to see the restart's JoinGroup answered.
    let inner: Consumer | undefined;
    const client = Object.create(kafka) as Kafka;
    client.consumer = (config) => {
      inner = kafka.consumer(config);
      return inner;
    };
    const consumer = testConsumer(client, topics.group, topics.facts, processor, output);
    await consumer.start();
    const stopping = new Promise<Promise<boolean>>((resolve) => {
      inner!.on(inner!.events.REQUEST, (event) => {
        if (crashed && event.payload.apiName === 'JoinGroup') resolve(consumer.stop());
      });
    });
    await produce(kafka, topics.facts, [{ key: 'a', value: JSON.stringify({ facts: { n: 1 } }) }]);
    // It left the group itself.
    expect(await await stopping).toBe(true);
    stopped = true;
    expect(consumer.state().status).toBe('stopped');
    await produce(kafka, topics.facts, [{ key: 'b', value: JSON.stringify({ facts: { n: 2 } }) }]);
    // Left at once, not after the 10 s session of a member kafkajs forgot about.
    const empty = async () => (await admin.describeGroups([topics.group])).groups[0]?.members.length === 0;
    expect(await eventually(empty, 5_000)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(await empty()).toBe(true);
    expect(handledAfterStop).toBe(0);
  });
});
