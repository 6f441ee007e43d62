// A dependency that is down is waited out, never a reason to dead-letter: while the schema registry cannot be reached
// the partition backs off and keeps its place; once it answers again the fact is evaluated and nothing is lost.
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import type { Admin, Kafka } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResultMessage } from '../../../src/contracts/kafka-messages.ts';
import { countStoredExecutions } from '../../../src/store/execution-batches.ts';
import {
  collect,
  deleteTestTopics,
  eventually,
  freePort,
  type InProcessService,
  kafkaConfig,
  parse,
  produce,
  startInProcessService,
  testKafka,
  testRegistryUrl,
  uniqueTopics,
} from './support.ts';

/** A plain forwarding proxy to the real registry, on a port that refuses connections until it is started. */
function registryProxy(port: number, target: URL): { start(): Promise<void>; stop(): Promise<void> } {
  let server: Server | undefined;
  return {
    start: () =>
      new Promise((resolve) => {
        server = createServer(async (request, response) => {
          const chunks: Buffer[] = [];
          for await (const chunk of request) chunks.push(chunk as Buffer);
          const upstream = await fetch(new URL(request.url ?? '/', `${target.origin}`), {
            method: request.method ?? 'GET',
            headers: {
              accept: String(request.headers.accept ?? '*/*'),
              'content-type': String(request.headers['content-type'] ?? 'application/json'),
            },
            ...(chunks.length > 0 ? { body: Buffer.concat(chunks) } : {}),
          });
          response.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/json' });
          response.end(Buffer.from(await upstream.arrayBuffer()));
        });
        server.listen(port, '127.0.0.1', () => resolve());
      }),
    stop: () => new Promise((resolve) => (server === undefined ? resolve() : server.close(() => resolve()))),
  };
}

describe('Kafka pipeline: transient failures', () => {
  const topics = uniqueTopics('transient');
  let kafka: Kafka;
  let admin: Admin;
  let service: InProcessService;
  let proxy: ReturnType<typeof registryProxy>;

  beforeAll(async () => {
    kafka = testKafka();
    admin = kafka.admin();
    await admin.connect();
    const registryUrl = new URL(testRegistryUrl());
    const port = await freePort();
    proxy = registryProxy(port, registryUrl);
    const proxiedUrl = `http://127.0.0.1:${port}${registryUrl.pathname}`;
    service = await startInProcessService(kafkaConfig(topics, { schemaRegistryUrl: proxiedUrl, partitions: 1 }), {
      changelogTopic: topics.changelog,
    });
  });

  afterAll(async () => {
    await service?.stop();
    await proxy?.stop();
    if (admin !== undefined) {
      await deleteTestTopics(admin, topics);
      await admin.disconnect();
    }
  });

  it('backs off while the registry is unreachable, then evaluates the fact once it answers, dead-lettering nothing', async () => {
    const registry = new SchemaRegistry({ host: testRegistryUrl() });
    const schema = {
      type: 'record',
      name: 'Fact',
      namespace: `rules.test.x${randomUUID().replaceAll('-', '')}`,
      fields: [{ name: 'facts', type: { type: 'record', name: 'Facts', fields: [{ name: 'amount', type: 'long' }] } }],
    };
    const { id } = await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(schema) }, { subject: `${topics.facts}-value` });
    await produce(kafka, topics.facts, [
      { key: 'a', value: await registry.encode(id, { facts: { amount: 5 } }), headers: { case: 'avro' } },
      { key: 'a', value: JSON.stringify({ facts: { amount: 6 } }), headers: { case: 'json-after' } },
    ]);

    // The first fact cannot be decoded yet: the partition is paused and nothing behind it is answered out of order.
    expect(await eventually(() => service.pipeline.state().backing_off_partitions.length > 0)).toBe(true);
    // No registry answered: the error says why (the client alone would call it a 400).
    expect(service.pipeline.state().last_error).toMatch(/schema registry could not be reached for schema id \d+ \(ECONNREFUSED\)/);
    expect(await service.pipeline.lag()).toBe(2);

    await proxy.start();
    const received = await collect(kafka, [topics.results, topics.dlq], (all) => all.length >= 2, {
      groupPrefix: topics.group,
      settleMs: 300,
    });
    expect(received.map((message) => [message.topic, message.headers.case])).toEqual([
      [topics.results, 'avro'],
      [topics.results, 'json-after'],
    ]);
    expect(parse<ResultMessage>(received[0]!).source.offset).toBe('0');
    expect(await eventually(async () => (await service.pipeline.lag()) === 0)).toBe(true);
    // The fact behind the wait was evaluated (and recorded) once, however many times the partition backed off.
    await service.store.executions.flush();
    expect(await countStoredExecutions(service.store.db)).toBe(2);
    const published = parse<ResultMessage>(received[1]!).execution_id;
    expect((await service.app.inject({ method: 'GET', url: `/api/v1/executions/${published}` })).statusCode).toBe(200);
  });

  it('sends a run whose delivery failed again from the evaluations it made: one record each, under the ids published', {
    timeout: 90_000,
  }, async () => {
    await service.store.executions.flush();
    const before = await countStoredExecutions(service.store.db);
    // The results topic is gone: every produce fails until it is back.
    await admin.deleteTopics({ topics: [topics.results], timeout: 10_000 });
    await produce(
      kafka,
      topics.facts,
      [1, 2, 3].map((n) => ({ key: 'b', value: JSON.stringify({ facts: { amount: n } }) })),
    );
    expect(await eventually(() => /delivery failed/.test(service.pipeline.state().last_error ?? ''), 60_000)).toBe(true);
    await admin.createTopics({ topics: [{ topic: topics.results, numPartitions: 1 }], waitForLeaders: true });
    const received = await collect(kafka, [topics.results], (all) => all.length >= 3, {
      groupPrefix: `${topics.group}.again`,
      settleMs: 300,
    });
    expect(received.map((message) => parse<ResultMessage>(message).source.offset)).toEqual(['2', '3', '4']);
    await service.store.executions.flush();
    expect(await countStoredExecutions(service.store.db)).toBe(before + 3);
    for (const message of received) {
      const id = parse<ResultMessage>(message).execution_id;
      expect((await service.app.inject({ method: 'GET', url: `/api/v1/executions/${id}` })).statusCode).toBe(200);
    }
  });
});
