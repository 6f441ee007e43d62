// Kafka test kit: endpoints of the shared test stack, per-test topic and group names, producing, collecting, and an
// in-process service (store, catalog, evaluator, HTTP app, pipeline) built the way service.ts builds it.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { type Admin, type IHeaders, Kafka, logLevel, type Message, Partitioners } from 'kafkajs';
import { expect } from 'vitest';
import { type KafkaConfig, loadConfig } from '../../../src/config.ts';
import { DEAD_LETTER_HEADERS, type ResultMessage } from '../../../src/contracts/kafka-messages.ts';
import { EngineMetrics } from '../../../src/engine/index.ts';
import { Evaluator } from '../../../src/evaluation/evaluator.ts';
import { RuleCatalog } from '../../../src/evaluation/rule-catalog.ts';
import { SessionEvaluator } from '../../../src/evaluation/session-evaluator.ts';
import { SessionMemoryMetrics } from '../../../src/evaluation/session-metrics.ts';
import { buildApp } from '../../../src/http/app.ts';
import { type KafkaPipeline, type KafkaPipelineState, type PipelineTuning, startKafkaPipeline } from '../../../src/kafka/index.ts';
import { createLogger, type Logger } from '../../../src/logger.ts';
import { MemorySessionStore } from '../../../src/sessions/memory-session-store.ts';
import type { SessionStore } from '../../../src/sessions/session-store.ts';
import { executionBacklog, type SqlStore } from '../../../src/store/index.ts';
import { openTestStore, type StoreKind } from '../../helpers/databases.ts';
import { stackEndpoints } from '../../helpers/stack.ts';

/** Bootstrap brokers of the test stack's broker (the stack takes KAFKA_BROKERS as given when set). */
export function testBrokers(): string[] {
  const brokers = stackEndpoints().kafkaBrokers;
  if (brokers.length === 0) throw new Error('the local stack has no Kafka');
  return [...brokers];
}

/** The test stack's Confluent-compatible schema registry URL. */
export function testRegistryUrl(): string {
  const url = stackEndpoints().schemaRegistryUrl;
  if (url === undefined) throw new Error('the local stack has no schema registry');
  return url;
}

export function testKafka(clientId = 'kafka-tests'): Kafka {
  return new Kafka({ clientId, brokers: testBrokers(), logLevel: logLevel.NOTHING });
}

export interface TestTopics {
  facts: string;
  results: string;
  dlq: string;
  changelog: string;
  group: string;
}

/** Fresh topic and group names, so tests never see each other's messages. */
export function uniqueTopics(label: string): TestTopics {
  const id = `${label}-${randomUUID().slice(0, 8)}`;
  return { facts: `facts-${id}`, results: `results-${id}`, dlq: `dlq-${id}`, changelog: `changelog-${id}`, group: `group-${id}` };
}

export function kafkaConfig(topics: TestTopics, overrides: Partial<KafkaConfig> = {}): KafkaConfig {
  return {
    brokers: testBrokers(),
    factsTopic: topics.facts,
    resultsTopic: topics.results,
    dlqTopic: topics.dlq,
    changelogTopic: topics.changelog,
    groupId: topics.group,
    exactlyOnce: false,
    streaming: false,
    recordExecutions: true,
    partitions: 3,
    maxResultBytes: 1_000_000,
    schemaRegistryUrl: undefined,
    ...overrides,
  };
}

/** The environment that points `node src/main.ts` at these topics. */
export function kafkaEnv(topics: TestTopics, extra: Record<string, string> = {}): Record<string, string> {
  return {
    KAFKA_BROKERS: testBrokers().join(','),
    KAFKA_FACTS_TOPIC: topics.facts,
    KAFKA_RESULTS_TOPIC: topics.results,
    KAFKA_DLQ_TOPIC: topics.dlq,
    KAFKA_CHANGELOG_TOPIC: topics.changelog,
    KAFKA_GROUP_ID: topics.group,
    KAFKA_PARTITIONS: '3',
    ...extra,
  };
}

/** Deletes the topics and every group whose name starts with the test's group (including changelog groups). */
export async function deleteTestTopics(admin: Admin, topics: TestTopics): Promise<void> {
  const existing = new Set(await admin.listTopics());
  const names = [topics.facts, topics.results, topics.dlq, topics.changelog].filter((topic) => existing.has(topic));
  if (names.length > 0) await admin.deleteTopics({ topics: names, timeout: 10_000 }).catch(() => undefined);
  const { groups } = await admin.listGroups();
  const ours = groups
    .map((group) => group.groupId)
    .filter((groupId) => groupId.startsWith(topics.group) || groupId.startsWith(`read-${topics.group}`));
  if (ours.length > 0) await admin.deleteGroups(ours).catch(() => undefined);
}

/** A test's teardown: the in-process service, then its topics and groups, then the admin; each may be missing after a failed setup. */
export async function stopKafkaTest(service: InProcessService | undefined, admin: Admin | undefined, topics: TestTopics): Promise<void> {
  await service?.stop();
  if (admin === undefined) return;
  await deleteTestTopics(admin, topics);
  await admin.disconnect();
}

export async function produce(kafka: Kafka, topic: string, messages: Message[]): Promise<void> {
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner, allowAutoTopicCreation: false });
  await producer.connect();
  try {
    for (let start = 0; start < messages.length; start += 1_000) {
      await producer.send({ topic, acks: -1, messages: messages.slice(start, start + 1_000) });
    }
  } finally {
    await producer.disconnect();
  }
}

export interface Received {
  topic: string;
  partition: number;
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  headers: Record<string, string>;
}

export function headersAsText(headers: IHeaders | undefined): Record<string, string> {
  const text: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    // kafkajs starts a header named like an Object.prototype member (toString) with the inherited function: skip it.
    const first = Array.isArray(value) ? value.find((item) => typeof item === 'string' || Buffer.isBuffer(item)) : value;
    if (first !== undefined) text[name] = first.toString();
  }
  return text;
}

/**
 * Reads the topics from the beginning (read_committed) until `done` says enough or the guard time runs out, then
 * returns everything read. The guard only stops a broken test from hanging; tests assert on what was read.
 */
export async function collect(
  kafka: Kafka,
  topics: readonly string[],
  done: (received: readonly Received[]) => boolean,
  options: { groupPrefix: string; guardMs?: number; settleMs?: number },
): Promise<Received[]> {
  const received: Received[] = [];
  const consumer = kafka.consumer({ groupId: `read-${options.groupPrefix}-${randomUUID().slice(0, 8)}`, maxWaitTimeInMs: 200 });
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [...topics], fromBeginning: true });
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => {
      finish = resolve;
    });
    await consumer.run({
      eachMessage: async ({ topic, partition, message }) => {
        received.push({
          topic,
          partition,
          offset: message.offset,
          key: message.key,
          value: message.value,
          headers: headersAsText(message.headers),
        });
        if (done(received)) finish();
      },
    });
    const guard = setTimeout(finish, options.guardMs ?? 60_000);
    await finished;
    clearTimeout(guard);
    // Anything still arriving (a duplicate, say) is read too before the test looks.
    if (options.settleMs !== undefined) await new Promise((resolve) => setTimeout(resolve, options.settleMs));
  } finally {
    await consumer.disconnect();
  }
  return received;
}

/** The input a result or dead letter answers, `partition@offset`: from a dead letter's headers, else the result's source. */
export function answeredPosition(message: Received): string {
  const offset = message.headers[DEAD_LETTER_HEADERS.sourceOffset];
  if (offset !== undefined) return `${message.headers[DEAD_LETTER_HEADERS.sourcePartition]}@${offset}`;
  const { source } = parse<ResultMessage>(message);
  return `${source.partition}@${source.offset}`;
}

/** How many distinct inputs the messages answer (a redelivered input counts once). */
export function distinctAnswers(received: readonly Received[]): number {
  return new Set(received.map(answeredPosition)).size;
}

/** Each input's first answer, in read order: what a test compares when at-least-once may have repeated some. */
export function firstAnswers(received: readonly Received[]): Received[] {
  const first = new Map<string, Received>();
  for (const message of received) {
    const position = answeredPosition(message);
    if (!first.has(position)) first.set(position, message);
  }
  return [...first.values()];
}

/** True once the consumer rejoined its group or retried a delivery: the only times at-least-once answers a run again. */
export function mayHaveReplayed(state: Pick<KafkaPipelineState, 'group_joins' | 'last_error'>): boolean {
  return state.group_joins > 1 || state.last_error !== null;
}

/**
 * The at-least-once contract on what a test read: every one of `inputs` answered, an answer repeated only as a copy
 * (same value apart from execution id and latency), and repeated at all only when `replayed` (see mayHaveReplayed).
 */
export function expectAnsweredAtLeastOnce(received: readonly Received[], inputs: number, replayed: boolean): void {
  const essence = (message: Received) => {
    if (message.headers[DEAD_LETTER_HEADERS.sourceOffset] !== undefined) return { dead: String(message.value), headers: message.headers };
    const { execution_id: _id, latency_ms: _latency, ...rest } = parse<ResultMessage>(message);
    return rest;
  };
  const first = new Map(firstAnswers(received).map((message) => [answeredPosition(message), message]));
  expect(first.size).toBe(inputs);
  for (const message of received) {
    const position = answeredPosition(message);
    expect(essence(message), `the answers to ${position}`).toEqual(essence(first.get(position)!));
  }
  expect(received.length === inputs || replayed, `${received.length - inputs} repeated answers without a rebalance or retry`).toBe(true);
}

export const parse = <T = Record<string, unknown>>(message: { value: Buffer | null }): T => JSON.parse(String(message.value)) as T;

export interface InProcessService {
  store: SqlStore;
  catalog: RuleCatalog;
  app: FastifyInstance;
  pipeline: KafkaPipeline;
  /** The session use case HTTP and Kafka share. */
  sessions: SessionEvaluator;
  /** The engine collector the sessions report working_memory_size and node_memory.hit_rate to. */
  engineMetrics: EngineMetrics;
  stop(): Promise<void>;
}

export interface InProcessServiceOptions {
  storeKind?: StoreKind;
  changelogTopic?: string;
  beforeStart?: (store: SqlStore) => Promise<void>;
  /** Working memory for sessions (the caller closes it); an in-process store when absent. */
  sessionStore?: SessionStore;
  /** RULES_SESSION_MAX_FACTS; the default when absent. */
  sessionMaxFacts?: number;
  tuning?: Partial<PipelineTuning>;
  /** The execution backlog the pipeline waits on; the store's own, as in service.ts, when absent. */
  pendingExecutions?: () => number;
  /** Where the service logs; nowhere when absent. */
  logger?: Logger;
}

/** The service as service.ts wires it, in this process: one evaluator and one session use case shared by HTTP and Kafka. */
export async function startInProcessService(config: KafkaConfig, options: InProcessServiceOptions = {}): Promise<InProcessService> {
  const { store, cleanup } = await openTestStore(options.storeKind ?? 'pglite');
  await options.beforeStart?.(store);
  const logger = options.logger ?? createLogger('silent');
  const engineMetrics = new EngineMetrics();
  const catalog = await RuleCatalog.open({ rules: store.rules, metrics: engineMetrics });
  const evaluator = new Evaluator({ catalog, executions: store.executions });
  const sessions = new SessionEvaluator({
    catalog,
    rulesets: store.rulesets,
    sessions: options.sessionStore ?? new MemorySessionStore(),
    executions: store.executions,
    maxFacts: options.sessionMaxFacts ?? loadConfig({}).sessions.maxFacts,
    writes: new SessionMemoryMetrics({ metrics: engineMetrics }),
  });
  const app = await buildApp({ config: loadConfig({}).http, version: '0.0.0-test', store, catalog, logger, evaluator, sessions });
  await app.ready();
  const pipeline = await startKafkaPipeline({
    config: options.changelogTopic === undefined ? config : { ...config, changelogTopic: options.changelogTopic },
    evaluator,
    sessions,
    rules: catalog,
    logger,
    ...(options.tuning === undefined ? {} : { tuning: options.tuning }),
    pendingExecutions: options.pendingExecutions ?? (() => executionBacklog(store.executions)),
  });
  return {
    store,
    catalog,
    app,
    pipeline,
    sessions,
    engineMetrics,
    async stop() {
      await pipeline.stop();
      await app.close();
      await cleanup();
    },
  };
}

/** A TCP port nothing listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** Polls until the check passes or the guard time runs out; returns whether it passed. */
export async function eventually(check: () => Promise<boolean> | boolean, guardMs = 30_000, intervalMs = 50): Promise<boolean> {
  const deadline = Date.now() + guardMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  return false;
}
