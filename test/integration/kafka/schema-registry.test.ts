// Confluent wire-format facts through the Apicurio registry: an Avro fact is evaluated exactly like its JSON twin,
// and registry payloads that can never be decoded are dead-lettered.
import { randomUUID } from 'node:crypto';
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import type { FastifyInstance } from 'fastify';
import type { Admin, Kafka } from 'kafkajs';
import protobuf from 'protobufjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResultMessage } from '../../../src/contracts/kafka-messages.ts';
import {
  collect,
  distinctAnswers,
  expectAnsweredAtLeastOnce,
  type InProcessService,
  kafkaConfig,
  mayHaveReplayed,
  parse,
  produce,
  type Received,
  startInProcessService,
  stopKafkaTest,
  testKafka,
  testRegistryUrl,
  uniqueTopics,
} from './support.ts';

const avroSchema = {
  type: 'record',
  name: 'FactMessage',
  namespace: `rules.test.x${randomUUID().replaceAll('-', '')}`,
  fields: [
    {
      name: 'facts',
      type: {
        type: 'record',
        name: 'Payment',
        fields: [
          { name: 'amount', type: 'double' },
          { name: 'country', type: 'string' },
          { name: 'tier', type: ['null', 'string'], default: null },
        ],
      },
    },
    { name: 'domain', type: ['null', 'string'], default: null },
    { name: 'session_id', type: ['null', 'string'], default: null },
  ],
} as const;

const jsonSchema = {
  type: 'object',
  properties: { facts: { type: 'object' }, domain: { type: ['string', 'null'] } },
  required: ['facts'],
};

/**
 * The same facts in Protobuf: an enum declared before the first message (message indexes count messages only), field
 * names as declared, and a well-known type imported without a reference, as Confluent's serializers register them.
 */
const protobufPackage = `rules.test.p${randomUUID().replaceAll('-', '')}`;
const protobufSchema = `syntax = "proto3";
package ${protobufPackage};
import "google/protobuf/timestamp.proto";
enum Channel { CHANNEL_UNKNOWN = 0; WEB = 1; }
message FactMessage { Payment facts = 1; optional string domain = 2; }
message Payment {
  double amount = 1; string country = 2; optional string tier = 3; google.protobuf.Timestamp seen_at = 4; Channel sales_channel = 5;
}`;

const FACTS = [
  { facts: { amount: 2_500, country: 'FR', tier: 'gold' }, domain: 'payments' },
  { facts: { amount: 10, country: 'US', tier: null }, domain: 'payments' },
  { facts: { amount: 1_200.5, country: 'DE', tier: null }, domain: null },
];

async function evaluateOverHttp(app: FastifyInstance, body: { facts: Record<string, unknown>; domain: string | null }) {
  const payload = body.domain === null ? { facts: body.facts } : body;
  const response = await app.inject({ method: 'POST', url: '/api/v1/evaluate', headers: { 'content-type': 'application/json' }, payload });
  return response.json();
}

describe('Kafka pipeline: schema registry', () => {
  const topics = uniqueTopics('registry');
  let kafka: Kafka;
  let admin: Admin;
  let service: InProcessService;
  let received: Received[];
  let avroId: number;
  let jsonId: number;
  let protobufId: number;
  const expected = FACTS.length * 4 + 2;

  beforeAll(async () => {
    kafka = testKafka();
    admin = kafka.admin();
    await admin.connect();
    const registryUrl = testRegistryUrl();
    service = await startInProcessService(kafkaConfig(topics, { schemaRegistryUrl: registryUrl }), { changelogTopic: topics.changelog });
    for (const rule of [
      { name: 'big', domain: 'payments', condition_dsl: { type: 'condition', field: 'amount', op: '>', value: 1_000 }, action: 'review' },
      { name: 'gold', domain: 'payments', condition_dsl: { type: 'condition', field: 'tier', op: '==', value: 'gold' }, action: 'vip' },
      {
        name: 'eu',
        domain: 'shipping',
        condition_dsl: { type: 'condition', field: 'country', op: 'in', value: ['FR', 'DE'] },
        action: 'eu',
      },
    ]) {
      const created = await service.app.inject({
        method: 'POST',
        url: '/api/v1/rules',
        headers: { 'content-type': 'application/json' },
        payload: rule,
      });
      expect(created.statusCode).toBe(201);
    }

    const registry = new SchemaRegistry({ host: registryUrl });
    avroId = (await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(avroSchema) }, { subject: `${topics.facts}-value` }))
      .id;
    jsonId = (
      await registry.register({ type: SchemaType.JSON, schema: JSON.stringify(jsonSchema) }, { subject: `${topics.facts}-json-value` })
    ).id;

    // Registered over the registry's REST API: the client's own compiler cannot read a file that starts with an enum.
    const registered = await fetch(`${registryUrl}/subjects/${topics.facts}-proto-value/versions`, {
      method: 'POST',
      headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
      body: JSON.stringify({ schemaType: 'PROTOBUF', schema: protobufSchema }),
    });
    expect(registered.status).toBe(200);
    protobufId = ((await registered.json()) as { id: number }).id;
    const root = new protobuf.Root();
    protobuf.parse(protobufSchema, root, { keepCase: true });
    root.addJSON(protobuf.common.get('google/protobuf/timestamp.proto')!.nested!);
    const protobufType = root.lookupType(`${protobufPackage}.FactMessage`);
    // Confluent's framing: magic byte, schema id, message indexes (a single 0: the first message), then the message.
    const protobufValue = (fact: (typeof FACTS)[number]) => {
      const header = Buffer.from([0, 0, 0, 0, 0, 0]);
      header.writeInt32BE(protobufId, 1);
      const message = {
        facts: {
          ...fact.facts,
          tier: fact.facts.tier ?? undefined,
          seen_at: { seconds: 1_764_115_200, nanos: 5_000_000 },
          sales_channel: 'WEB',
        },
        domain: fact.domain ?? undefined,
      };
      return Buffer.concat([header, protobufType.encode(protobufType.fromObject(message)).finish()]);
    };

    const messages = [];
    for (const [index, fact] of FACTS.entries()) {
      messages.push({ key: `k-${index}`, value: protobufValue(fact), headers: { case: `protobuf-${index}` } });
      messages.push({
        key: `k-${index}`,
        value: await registry.encode(avroId, { ...fact, session_id: null }),
        headers: { case: `avro-${index}` },
      });
      messages.push({ key: `k-${index}`, value: JSON.stringify(fact), headers: { case: `json-${index}` } });
      messages.push({ key: `k-${index}`, value: await registry.encode(jsonId, fact), headers: { case: `jsonschema-${index}` } });
    }
    const unknownId = Buffer.alloc(9);
    unknownId.writeInt32BE(2_000_000_000, 1);
    messages.push({ key: 'bad-1', value: unknownId, headers: { case: 'unknown-schema' } });
    const truncated = (await registry.encode(avroId, { ...FACTS[0]!, session_id: null })).subarray(0, 8);
    messages.push({ key: 'bad-2', value: truncated, headers: { case: 'truncated' } });
    await produce(kafka, topics.facts, messages);
    received = await collect(kafka, [topics.results, topics.dlq], (all) => distinctAnswers(all) >= expected, {
      groupPrefix: topics.group,
      settleMs: 300,
    });
  });

  afterAll(() => stopKafkaTest(service, admin, topics));

  const byCase = (name: string) => received.find((message) => message.headers.case === name);

  it('answers every message', () => {
    expectAnsweredAtLeastOnce(received, expected, mayHaveReplayed(service.pipeline.state()));
  });

  it('evaluates an Avro-encoded fact exactly like its JSON twin and like POST /api/v1/evaluate', async () => {
    for (const [index, fact] of FACTS.entries()) {
      const avro = parse<ResultMessage>(byCase(`avro-${index}`)!);
      const json = parse<ResultMessage>(byCase(`json-${index}`)!);
      const http = await evaluateOverHttp(service.app, fact);
      const essence = (result: { fired_rules: number[]; actions: string[]; revision: number }) => ({
        fired_rules: result.fired_rules,
        actions: result.actions,
        revision: result.revision,
      });
      expect(essence(avro)).toEqual(essence(json));
      expect(essence(avro)).toEqual(essence(http));
      expect(avro.domain).toBe(fact.domain);
    }
    expect(parse<ResultMessage>(byCase('avro-0')!).actions).toEqual(['review', 'vip']);
  });

  it('evaluates a Protobuf fact like its JSON twin, with the names its file declares and well-known types as proto3 JSON', async () => {
    for (const index of FACTS.keys()) {
      const viaProtobuf = parse<ResultMessage>(byCase(`protobuf-${index}`)!);
      const plain = parse<ResultMessage>(byCase(`json-${index}`)!);
      expect(viaProtobuf.fired_rules).toEqual(plain.fired_rules);
      expect(viaProtobuf.domain).toBe(plain.domain);
    }
    const recorded = await service.app.inject({
      method: 'GET',
      url: `/api/v1/executions/${parse<ResultMessage>(byCase('protobuf-0')!).execution_id}`,
    });
    expect(recorded.json().facts).toEqual({
      amount: 2_500,
      country: 'FR',
      tier: 'gold',
      seen_at: '2025-11-26T00:00:00.005Z',
      sales_channel: 'WEB',
    });
  });

  it('decodes JSON Schema wire-format values too', () => {
    for (const index of FACTS.keys()) {
      const viaSchema = parse<ResultMessage>(byCase(`jsonschema-${index}`)!);
      const plain = parse<ResultMessage>(byCase(`json-${index}`)!);
      expect(viaSchema.fired_rules).toEqual(plain.fired_rules);
    }
  });

  it('dead-letters a value naming a schema id the registry does not know', () => {
    const dead = byCase('unknown-schema')!;
    expect(dead.topic).toBe(topics.dlq);
    expect(dead.headers.error_code).toBe('VALIDATION_ERROR');
    expect(dead.headers.error_detail).toBe('schema id 2000000000 is not in the schema registry');
  });

  it('dead-letters a payload that does not decode with its schema, keeping its bytes', () => {
    const dead = byCase('truncated')!;
    expect(dead.topic).toBe(topics.dlq);
    expect(dead.headers.error_code).toBe('VALIDATION_ERROR');
    expect(dead.headers.error_detail).toMatch(new RegExp(`^value does not decode with schema id ${avroId}: `));
    expect(dead.value).toHaveLength(8);
    expect(dead.value![0]).toBe(0);
  });
});
