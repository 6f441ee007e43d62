// Poison messages go to the dead-letter topic with their original bytes and the reason; the good ones still get results.
import type { Admin, Kafka, Message } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResultMessage } from '../../../src/contracts/kafka-messages.ts';
import { resultHeadroom } from '../../../src/kafka/topics.ts';
import {
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

interface Poison {
  name: string;
  value: Buffer | null;
  detail: RegExp;
}

const POISON: Poison[] = [
  { name: 'invalid JSON', value: Buffer.from('{"facts": {"amount": 12'), detail: /^value is not valid JSON: / },
  { name: 'not JSON at all', value: Buffer.from([0xff, 0xfe, 0x01, 0x7b]), detail: /^value is not valid JSON: / },
  { name: 'missing facts', value: Buffer.from('{"domain":"payments"}'), detail: /^fact message does not match the schema: facts: / },
  { name: 'facts not an object', value: Buffer.from('{"facts":[1,2,3]}'), detail: /facts: Invalid input: expected record, received array/ },
  { name: 'facts a string', value: Buffer.from('{"facts":"amount=5"}'), detail: /facts: Invalid input: expected record, received string/ },
  { name: 'domain of the wrong type', value: Buffer.from('{"facts":{},"domain":42}'), detail: /domain: / },
  { name: 'unknown field', value: Buffer.from('{"facts":{},"priority":1}'), detail: /Unrecognized key: "priority"/ },
  { name: 'a JSON array', value: Buffer.from('[{"facts":{}}]'), detail: /^fact message does not match the schema: value: / },
  { name: 'prototype poisoning', value: Buffer.from('{"facts":{"__proto__":{"admin":true}}}'), detail: /forbidden key at facts.__proto__/ },
  { name: 'a tombstone', value: null, detail: /^message has no value$/ },
  {
    name: 'a number a double cannot hold',
    value: Buffer.from('{"facts":{"amount":-1e400}}'),
    detail: /^value holds a number beyond the range of a double \(±1\.7976931348623157e308\) at facts\.amount$/,
  },
  {
    name: 'a registry-framed value without a registry',
    value: Buffer.from([0, 0, 0, 0, 7, 2, 4]),
    detail: /^value is in the schema registry wire format but SCHEMA_REGISTRY_URL is not configured$/,
  },
];

const GOOD = 40;

/** The input offset a result or dead letter answers. */
const offsetOf = (message: Received) => message.headers.source_offset ?? parse<ResultMessage>(message).source.offset;

/** Answers sorted by the input offset they answer. */
const inOffsetOrder = (answers: Received[]) => answers.sort((a, b) => Number(offsetOf(a)) - Number(offsetOf(b)));

describe('Kafka pipeline: dead letters', () => {
  const topics = uniqueTopics('dlq');
  let kafka: Kafka;
  let admin: Admin;
  let service: InProcessService;
  let received: Received[];
  const sent: { message: Message; poison?: Poison }[] = [];

  beforeAll(async () => {
    kafka = testKafka();
    admin = kafka.admin();
    await admin.connect();
    service = await startInProcessService(kafkaConfig(topics), { changelogTopic: topics.changelog });
    // Poison is spread among good messages on the same keys, so a dead letter must not hold up the facts behind it.
    for (let index = 0; index < GOOD; index++) {
      sent.push({
        message: {
          key: `key-${index % 4}`,
          value: JSON.stringify({ facts: { amount: index } }),
          headers: { 'correlation-id': `good-${index}` },
        },
      });
      const poison = POISON[index];
      if (poison !== undefined) {
        sent.push({
          message: {
            key: Buffer.from([0x6b, index, 0xff]),
            value: poison.value,
            headers: { 'correlation-id': `poison-${index}`, 'x-origin': 'legacy' },
          },
          poison,
        });
      }
    }
    await produce(
      kafka,
      topics.facts,
      sent.map((entry) => entry.message),
    );
    received = await collect(kafka, [topics.results, topics.dlq], (all) => distinctAnswers(all) >= sent.length, {
      groupPrefix: topics.group,
      settleMs: 500,
    });
  });

  afterAll(() => stopKafkaTest(service, admin, topics));

  it('loses nothing: every good message has a result, every poison message a dead letter', () => {
    expectAnsweredAtLeastOnce(received, sent.length, mayHaveReplayed(service.pipeline.state()));
    const answers = firstAnswers(received);
    const results = answers.filter((message) => message.topic === topics.results);
    const deadLetters = answers.filter((message) => message.topic === topics.dlq);
    expect(results.map((message) => message.headers['correlation-id']).sort()).toEqual(
      Array.from({ length: GOOD }, (_, index) => `good-${index}`).sort(),
    );
    expect(deadLetters.map((message) => message.headers['correlation-id']).sort()).toEqual(
      POISON.map((_, index) => `poison-${index}`).sort(),
    );
    for (const message of results) expect(parse<ResultMessage>(message).fired_rules).toEqual([]);
  });

  it('keeps the original key and value bytes and the original headers of each dead letter', () => {
    for (const message of received.filter((entry) => entry.topic === topics.dlq)) {
      const index = Number(message.headers['correlation-id']!.slice('poison-'.length));
      const original = sent.find((entry) => entry.message.headers?.['correlation-id'] === `poison-${index}`)!;
      expect(message.key).toEqual(original.message.key);
      if (original.poison!.value === null) expect(message.value).toBeNull();
      else expect(message.value).toEqual(original.poison!.value);
      expect(message.headers['x-origin']).toBe('legacy');
    }
  });

  it('names the error code, the reason and the source position in headers', async () => {
    const offsets = await admin.fetchTopicOffsets(topics.facts);
    for (const message of received.filter((entry) => entry.topic === topics.dlq)) {
      const poison = POISON[Number(message.headers['correlation-id']!.slice('poison-'.length))]!;
      expect(message.headers.error_code, poison.name).toBe('VALIDATION_ERROR');
      expect(message.headers.error_detail, poison.name).toMatch(poison.detail);
      expect(message.headers.source_topic).toBe(topics.facts);
      const partition = Number(message.headers.source_partition);
      const offset = Number(message.headers.source_offset);
      const end = offsets.find((entry) => entry.partition === partition);
      expect(end, `partition ${partition} exists`).toBeDefined();
      expect(offset).toBeLessThan(Number(end!.high));
    }
  });

  it('commits past the poison: nothing is left to consume', async () => {
    // The commit follows the produce acknowledgement, so it may land just after the last dead letter is read.
    expect(await eventually(async () => (await service.pipeline.lag()) === 0)).toBe(true);
    expect(service.pipeline.state().last_error).toBeNull();
  });
});

describe('Kafka pipeline: a result too large to publish', () => {
  const topics = uniqueTopics('dlq-large');
  let kafka: Kafka;
  let admin: Admin;
  let service: InProcessService;
  let received: Received[];
  const RULES = 60;

  beforeAll(async () => {
    kafka = testKafka();
    admin = kafka.admin();
    await admin.connect();
    // A limit that a result naming a few rules fits and one naming all 60 does not.
    service = await startInProcessService(kafkaConfig(topics, { maxResultBytes: 1_000 }), { changelogTopic: topics.changelog });
    for (let index = 0; index < RULES; index++) {
      const rule = {
        name: `threshold-${index}`,
        condition_dsl: { type: 'condition', field: 'amount', op: '>', value: index * 10 },
        action: `action-with-a-rather-long-name-${index}`,
      };
      const created = await service.app.inject({
        method: 'POST',
        url: '/api/v1/rules',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify(rule),
      });
      expect(created.statusCode).toBe(201);
    }
    const inputs = [5, 10_000, 25].map((amount, index) => ({ key: `k-${index}`, value: JSON.stringify({ facts: { amount } }) }));
    await produce(kafka, topics.facts, inputs);
    received = await collect(kafka, [topics.results, topics.dlq], (all) => distinctAnswers(all) >= inputs.length, {
      groupPrefix: topics.group,
      settleMs: 500,
    });
  });

  afterAll(() => stopKafkaTest(service, admin, topics));

  it('dead-letters the fact whose result is over KAFKA_MAX_RESULT_BYTES and publishes the others', () => {
    expectAnsweredAtLeastOnce(received, 3, mayHaveReplayed(service.pipeline.state()));
    const answers = firstAnswers(received);
    const results = answers.filter((message) => message.topic === topics.results);
    const deadLetters = answers.filter((message) => message.topic === topics.dlq);
    expect(results.map((message) => String(message.key)).sort()).toEqual(['k-0', 'k-2']);
    expect(results.map((message) => parse<ResultMessage>(message).fired_rules.length).sort()).toEqual([1, 3]);
    expect(deadLetters).toHaveLength(1);
    expect(String(deadLetters[0]!.key)).toBe('k-1');
    expect(String(deadLetters[0]!.value)).toBe(JSON.stringify({ facts: { amount: 10_000 } }));
    expect(deadLetters[0]!.headers.error_code).toBe('PAYLOAD_TOO_LARGE');
    expect(deadLetters[0]!.headers.error_detail).toMatch(/over the 1000-byte limit for one result message \(KAFKA_MAX_RESULT_BYTES\)/);
  });

  it('keeps consuming: the partitions are not held up', async () => {
    expect(await eventually(async () => (await service.pipeline.lag()) === 0, 30_000)).toBe(true);
  });
});

describe('Kafka pipeline: a results topic made elsewhere that takes smaller messages than KAFKA_MAX_RESULT_BYTES', () => {
  const topics = uniqueTopics('dlq-topic-limit');
  const TOPIC_MAX_MESSAGE_BYTES = 40_000;
  let kafka: Kafka;
  let admin: Admin;
  let service: InProcessService;
  let received: Received[];

  beforeAll(async () => {
    kafka = testKafka();
    admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({
      topics: [
        {
          topic: topics.results,
          numPartitions: 3,
          configEntries: [{ name: 'max.message.bytes', value: String(TOPIC_MAX_MESSAGE_BYTES) }],
        },
      ],
      waitForLeaders: true,
    });
    // KAFKA_MAX_RESULT_BYTES stays at its default (1,000,000): a result of ~50 KB passes it but not the topic.
    service = await startInProcessService(kafkaConfig(topics), { changelogTopic: topics.changelog });
    for (let index = 0; index < 150; index++) {
      const created = await service.app.inject({
        method: 'POST',
        url: '/api/v1/rules',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({
          name: `wide-${index}`,
          condition_dsl: { type: 'condition', field: 'amount', op: '>', value: index * 10 },
          action: `${'a'.repeat(190)}-${index}`,
        }),
      });
      expect(created.statusCode).toBe(201);
    }
    const inputs = [5, 10_000].map((amount, index) => ({ key: `k-${index}`, value: JSON.stringify({ facts: { amount } }) }));
    // Then 300 small results on one key, ~180 KB together: more than the topic takes in one record batch.
    inputs.push(...Array.from({ length: 300 }, (_, index) => ({ key: 'many', value: JSON.stringify({ facts: { amount: 5, index } }) })));
    await produce(kafka, topics.facts, inputs);
    received = await collect(kafka, [topics.results, topics.dlq], (all) => distinctAnswers(all) >= inputs.length, {
      groupPrefix: topics.group,
      settleMs: 500,
    });
  });

  afterAll(() => stopKafkaTest(service, admin, topics));

  it("dead-letters a result over the topic's limit instead of retrying it for ever, and publishes the others", async () => {
    const answers = firstAnswers(received);
    const results = answers.filter((message) => message.topic === topics.results);
    const deadLetters = answers.filter((message) => message.topic === topics.dlq);
    expect(results.filter((message) => String(message.key) !== 'many').map((message) => String(message.key))).toEqual(['k-0']);
    // Published in requests the topic takes, in input order.
    const many = results
      .filter((message) => String(message.key) === 'many')
      .map((message) => Number(parse<ResultMessage>(message).source.offset));
    expect(many).toHaveLength(300);
    expect(many).toEqual([...many].sort((a, b) => a - b));
    expect(deadLetters.map((message) => String(message.key))).toEqual(['k-1']);
    expect(deadLetters[0]!.headers.error_code).toBe('PAYLOAD_TOO_LARGE');
    expect(deadLetters[0]!.headers.error_detail).toMatch(
      new RegExp(
        `over the ${TOPIC_MAX_MESSAGE_BYTES - resultHeadroom(TOPIC_MAX_MESSAGE_BYTES)}-byte limit for one result message \\(the results topic's max.message.bytes\\)`,
      ),
    );
    expect(await eventually(async () => (await service.pipeline.lag()) === 0, 30_000)).toBe(true);
  });
});

describe('Kafka pipeline: a fact whose headers make its result larger than the results topic takes', () => {
  const topics = uniqueTopics('dlq-headers');
  let kafka: Kafka;
  let admin: Admin;
  let service: InProcessService;
  let received: Received[];
  // One header sent 2,000 times (kafkajs: an array): ~114 KB on the wire with its name each time, while the results
  // topic takes 100,000 bytes; the result itself is a few hundred bytes.
  const baggage = Array.from({ length: 2_000 }, (_, index) => `${index}`.padStart(40, '0'));

  beforeAll(async () => {
    kafka = testKafka();
    admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({
      topics: [{ topic: topics.results, numPartitions: 1, configEntries: [{ name: 'max.message.bytes', value: '100000' }] }],
      waitForLeaders: true,
    });
    service = await startInProcessService(kafkaConfig(topics, { partitions: 1 }), { changelogTopic: topics.changelog });
    await produce(kafka, topics.facts, [{ key: 'k', value: JSON.stringify({ facts: { n: 0 } }) }]);
    await produce(kafka, topics.facts, [{ key: 'k', value: JSON.stringify({ facts: { n: 1 } }), headers: { baggage } }]);
    await produce(kafka, topics.facts, [
      { key: 'k', value: JSON.stringify({ facts: { n: 2 } }) },
      { key: 'k', value: JSON.stringify({ facts: { n: 3 } }) },
    ]);
    received = await collect(kafka, [topics.results, topics.dlq], (all) => distinctAnswers(all) >= 4, {
      groupPrefix: topics.group,
      settleMs: 500,
    });
  });

  afterAll(() => stopKafkaTest(service, admin, topics));

  it('dead-letters it, headers and all, and publishes the facts after it instead of holding up the partition', async () => {
    expectAnsweredAtLeastOnce(received, 4, mayHaveReplayed(service.pipeline.state()));
    const answers = inOffsetOrder(firstAnswers(received));
    expect(answers.map((message) => [message.topic, offsetOf(message)])).toEqual([
      [topics.results, '0'],
      [topics.dlq, '1'],
      [topics.results, '2'],
      [topics.results, '3'],
    ]);
    const deadLetter = answers[1]!;
    expect(deadLetter.headers.error_code).toBe('PAYLOAD_TOO_LARGE');
    expect(deadLetter.headers.error_detail).toMatch(/bytes of headers carried from the input is \d+ bytes, over the 99872 bytes/);
    expect(await eventually(async () => (await service.pipeline.lag()) === 0, 30_000)).toBe(true);
  });
});

describe('Kafka pipeline: a run of dead letters larger than the broker takes in one record batch', () => {
  const topics = uniqueTopics('dlq-run');
  let kafka: Kafka;
  let admin: Admin;
  let service: InProcessService;
  let received: Received[];
  // 2,000 poison messages of ~900 bytes on one key: runs of up to 1,000, each ~1.2 MB once dead-lettered with their
  // headers, over the broker's default max.message.bytes (1 MiB) for one partition's batch.
  const COUNT = 2_000;

  beforeAll(async () => {
    kafka = testKafka();
    admin = kafka.admin();
    await admin.connect();
    service = await startInProcessService(kafkaConfig(topics), { changelogTopic: topics.changelog });
    const inputs = Array.from({ length: COUNT }, (_, index) => ({
      key: 'one-key',
      value: `{"facts": {"n": ${index}, "pad": "${'x'.repeat(880)}`,
    }));
    await produce(kafka, topics.facts, inputs);
    received = await collect(kafka, [topics.dlq], (all) => distinctAnswers(all) >= COUNT, { groupPrefix: topics.group, settleMs: 500 });
  });

  afterAll(() => stopKafkaTest(service, admin, topics));

  it('dead-letters every one of them, in order, and moves on', async () => {
    expectAnsweredAtLeastOnce(received, COUNT, mayHaveReplayed(service.pipeline.state()));
    const offsets = firstAnswers(received).map((message) => Number(message.headers.source_offset));
    expect(offsets).toEqual(Array.from({ length: COUNT }, (_, index) => index));
    expect(await eventually(async () => (await service.pipeline.lag()) === 0, 30_000)).toBe(true);
  });
});

describe('Kafka pipeline: a poison message as large as the broker takes', () => {
  const topics = uniqueTopics('dlq-big');
  let kafka: Kafka;
  let admin: Admin;
  let service: InProcessService;
  let received: Received[];
  // Just under the broker's default max.message.bytes (1,048,588) with its batch: the dead letter adds its headers.
  const value = Buffer.from(`{"facts": {"pad": "${'x'.repeat(1_048_420)}`);

  beforeAll(async () => {
    kafka = testKafka();
    admin = kafka.admin();
    await admin.connect();
    service = await startInProcessService(kafkaConfig(topics), { changelogTopic: topics.changelog });
    await produce(kafka, topics.facts, [
      { key: 'big', value },
      { key: 'big', value: JSON.stringify({ facts: { amount: 1 } }) },
    ]);
    received = await collect(kafka, [topics.results, topics.dlq], (all) => distinctAnswers(all) >= 2, {
      groupPrefix: topics.group,
      settleMs: 500,
    });
  });

  afterAll(() => stopKafkaTest(service, admin, topics));

  it('dead-letters it with its bytes unchanged and goes on to the next fact', () => {
    expectAnsweredAtLeastOnce(received, 2, mayHaveReplayed(service.pipeline.state()));
    const answers = firstAnswers(received);
    const deadLetter = answers.find((message) => message.topic === topics.dlq);
    expect(deadLetter?.value?.equals(value)).toBe(true);
    expect(deadLetter?.headers.error_code).toBe('VALIDATION_ERROR');
    expect(answers.filter((message) => message.topic === topics.results)).toHaveLength(1);
  });
});

describe('Kafka pipeline: a dead-letter topic made elsewhere that takes smaller messages than the facts topic', () => {
  const topics = uniqueTopics('dlq-small');
  let kafka: Kafka;
  let admin: Admin;
  let service: InProcessService;
  let received: Received[];
  const DLQ_MAX_MESSAGE_BYTES = 20_000;
  // Over what the dead-letter topic takes, with or without its headers; the facts topic takes it (1 MiB).
  const big = Buffer.from(`{"facts": {"pad": "${'x'.repeat(30_000)}`);
  // A header that alone takes the dead letter past the topic's limit.
  const baggage = 'b'.repeat(25_000);

  beforeAll(async () => {
    kafka = testKafka();
    admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({
      topics: [
        { topic: topics.dlq, numPartitions: 1, configEntries: [{ name: 'max.message.bytes', value: String(DLQ_MAX_MESSAGE_BYTES) }] },
      ],
      waitForLeaders: true,
    });
    service = await startInProcessService(kafkaConfig(topics, { partitions: 1 }), { changelogTopic: topics.changelog });
    // Then 40 poison messages of ~1 KB on the same key: ~45 KB of dead letters in one run, over one batch of that topic.
    const run = Array.from({ length: 40 }, (_, index) => ({ key: 'k', value: `{"facts": {"n": ${index}, "pad": "${'x'.repeat(1_000)}` }));
    await produce(kafka, topics.facts, [
      { key: 'k', value: big },
      { key: 'k', value: '{"facts": 1}', headers: { baggage } },
      ...run,
      { key: 'k', value: JSON.stringify({ facts: { amount: 1 } }) },
    ]);
    received = await collect(kafka, [topics.results, topics.dlq], (all) => distinctAnswers(all) >= 43, {
      groupPrefix: topics.group,
      settleMs: 500,
    });
  });

  afterAll(() => stopKafkaTest(service, admin, topics));

  it('dead-letters every message, in order, and answers the fact after them instead of holding up the partition', async () => {
    expectAnsweredAtLeastOnce(received, 43, mayHaveReplayed(service.pipeline.state()));
    const answers = inOffsetOrder(firstAnswers(received));
    expect(answers.map((message) => message.topic)).toEqual([...Array.from({ length: 42 }, () => topics.dlq), topics.results]);
    expect(answers.map((message) => Number(offsetOf(message)))).toEqual(Array.from({ length: 43 }, (_, index) => index));
    expect(await eventually(async () => (await service.pipeline.lag()) === 0, 30_000)).toBe(true);
  });

  it('sends a dead letter the topic cannot take with its reason and position but without the bytes it cannot hold', () => {
    const [tooBig, tooManyHeaders, fitting] = firstAnswers(received)
      .filter((message) => message.topic === topics.dlq)
      .sort((a, b) => Number(a.headers.source_offset) - Number(b.headers.source_offset));
    expect(tooBig!.value).toBeNull();
    expect(String(tooBig!.key)).toBe('k');
    expect(tooBig!.headers.error_code).toBe('VALIDATION_ERROR');
    expect(tooBig!.headers.error_detail).toMatch(
      /^value is not valid JSON: .*\(original value and headers not copied: the dead letter would be 30\d{3} bytes, over the 19872 bytes the dead-letter topic takes in one message; read them at source_topic, source_partition, source_offset\)$/,
    );
    expect(tooManyHeaders!.value).toBeNull();
    expect(tooManyHeaders!.headers.baggage).toBeUndefined();
    expect(tooManyHeaders!.headers.error_detail).toMatch(
      /^fact message does not match the schema: .*\(original value and headers not copied/,
    );
    // One that fits keeps its bytes.
    expect(String(fitting!.value)).toMatch(/^\{"facts": \{"n": 0, /);
  });
});
