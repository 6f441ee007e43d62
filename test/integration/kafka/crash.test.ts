// Delivery across process death: the service is SIGKILLed mid-stream and restarted. At-least-once: every input has a
// result. Exactly-once: every input has exactly one committed result (read_committed). SIGTERM: exit 0, nothing redone.
import type { Admin, Kafka, Message } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResultMessage } from '../../../src/contracts/kafka-messages.ts';
import { openStore } from '../../../src/store/index.ts';
import { createTempDataDir } from '../../helpers/databases.ts';
import { startServiceProcess } from './service-process.ts';
import {
  collect,
  deleteTestTopics,
  eventually,
  kafkaEnv,
  parse,
  produce,
  type Received,
  type TestTopics,
  testKafka,
  uniqueTopics,
} from './support.ts';

const N = 3_000;
// Two service starts, a group rebalance after the kill (the dead member's 10 s session must lapse) and a full read.
const SLOW = 300_000;

/** One fresh PGlite data directory holding one rule, so results carry a fired rule. */
async function dataDirWithRule(): Promise<{ path: string; remove(): Promise<void> }> {
  const dir = await createTempDataDir();
  const store = await openStore({ dataDir: dir.path });
  await store.rules.create(
    { name: 'big', condition_dsl: { type: 'condition', field: 'amount', op: '>', value: 500 }, action: 'review' },
    'test',
  );
  await store.close();
  return dir;
}

function facts(from: number, to: number): Message[] {
  const messages: Message[] = [];
  for (let index = from; index < to; index++) {
    messages.push({
      key: `key-${index % 20}`,
      value: JSON.stringify({ facts: { amount: index % 1_000 } }),
      headers: { 'correlation-id': String(index) },
    });
  }
  return messages;
}

/** Counts results as they appear (uncommitted ones too), so the test knows the service is mid-stream. */
async function watchResults(kafka: Kafka, topics: TestTopics): Promise<{ count(): number; stop(): Promise<void> }> {
  let count = 0;
  const consumer = kafka.consumer({ groupId: `read-${topics.group}-watch`, readUncommitted: true, maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topics: [topics.results], fromBeginning: true });
  await consumer.run({
    eachBatch: async ({ batch }) => {
      count += batch.messages.length;
    },
  });
  return { count: () => count, stop: () => consumer.disconnect() };
}

/** Produces the facts in small slices while the service runs, so a kill lands mid-stream. */
function produceSlowly(kafka: Kafka, topic: string): Promise<void> {
  return (async () => {
    for (let from = 0; from < N; from += 100) {
      await produce(kafka, topic, facts(from, from + 100));
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
}

function answersPerInput(results: readonly Received[]): Map<number, number> {
  const counts = new Map<number, number>();
  for (const message of results) {
    const index = Number(message.headers['correlation-id']);
    counts.set(index, (counts.get(index) ?? 0) + 1);
  }
  return counts;
}

describe('Kafka pipeline: crashes and shutdown', () => {
  let kafka: Kafka;
  let admin: Admin;
  const used: TestTopics[] = [];
  const cleanups: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    kafka = testKafka();
    admin = kafka.admin();
    await admin.connect();
  });

  afterAll(async () => {
    for (const cleanup of cleanups) await cleanup().catch(() => undefined);
    if (admin !== undefined) {
      for (const topics of used) await deleteTestTopics(admin, topics);
      await admin.disconnect();
    }
  });

  async function crashMidStreamAndRestart(label: string, exactlyOnce: boolean): Promise<{ results: Received[]; atKill: number }> {
    const topics = uniqueTopics(label);
    used.push(topics);
    const dataDir = await dataDirWithRule();
    cleanups.push(() => dataDir.remove());
    const env = kafkaEnv(topics, { RULES_DATA_DIR: dataDir.path, KAFKA_EXACTLY_ONCE: String(exactlyOnce) });

    const first = await startServiceProcess(env);
    cleanups.push(async () => first.signal('SIGKILL'));
    await first.ready();
    const watcher = await watchResults(kafka, topics);
    cleanups.push(() => watcher.stop());
    const producing = produceSlowly(kafka, topics.facts);

    expect(await eventually(() => watcher.count() >= 200, 60_000, 10), first.output()).toBe(true);
    first.signal('SIGKILL');
    expect(await first.exited()).toBeNull();
    const atKill = watcher.count();

    const second = await startServiceProcess(env);
    cleanups.push(async () => second.signal('SIGKILL'));
    await second.ready();
    await producing;
    const results = await collect(kafka, [topics.results], (all) => answersPerInput(all).size >= N, {
      groupPrefix: topics.group,
      guardMs: 120_000,
      settleMs: 1_000,
    });
    second.signal('SIGTERM');
    expect(await second.exited(), second.output()).toBe(0);
    return { results, atKill };
  }

  it(
    'at-least-once: after a SIGKILL mid-stream and a restart, every input has at least one result',
    async () => {
      const { results, atKill } = await crashMidStreamAndRestart('crash-alo', false);
      expect(atKill).toBeLessThan(N);
      const counts = answersPerInput(results);
      expect(counts.size).toBe(N);
      for (let index = 0; index < N; index++) expect(counts.get(index) ?? 0, `input ${index}`).toBeGreaterThanOrEqual(1);
      for (const message of results.slice(0, 50)) {
        const result = parse<ResultMessage>(message);
        expect(result.actions).toEqual(Number(message.headers['correlation-id']) % 1_000 > 500 ? ['review'] : []);
      }
    },
    SLOW,
  );

  it(
    'exactly-once: after a SIGKILL mid-stream and a restart, every input has exactly one committed result',
    async () => {
      const { results, atKill } = await crashMidStreamAndRestart('crash-eos', true);
      expect(atKill).toBeLessThan(N);
      const counts = answersPerInput(results);
      expect(counts.size).toBe(N);
      const duplicated = [...counts.entries()].filter(([, count]) => count !== 1);
      expect(duplicated).toEqual([]);
      expect(results).toHaveLength(N);
    },
    SLOW,
  );

  it(
    'SIGTERM: finishes the batch in hand, commits, exits 0; a restart redoes nothing',
    async () => {
      const topics = uniqueTopics('sigterm');
      used.push(topics);
      const dataDir = await dataDirWithRule();
      cleanups.push(() => dataDir.remove());
      const env = kafkaEnv(topics, { RULES_DATA_DIR: dataDir.path });

      const first = await startServiceProcess(env);
      cleanups.push(async () => first.signal('SIGKILL'));
      await first.ready();
      const watcher = await watchResults(kafka, topics);
      cleanups.push(() => watcher.stop());
      await produce(kafka, topics.facts, facts(0, 1_000));
      expect(await eventually(() => watcher.count() > 0, 60_000, 10)).toBe(true);
      first.signal('SIGTERM');
      // The service's own shutdown timer (RULES_SHUTDOWN_TIMEOUT, 10 s) exits 1 if stopping takes longer.
      expect(await first.exited(), first.output()).toBe(0);
      const answeredBeforeStop = watcher.count();

      await produce(kafka, topics.facts, facts(1_000, 1_500));
      const second = await startServiceProcess(env);
      cleanups.push(async () => second.signal('SIGKILL'));
      await second.ready();
      const results = await collect(kafka, [topics.results], (all) => answersPerInput(all).size >= 1_500, {
        groupPrefix: topics.group,
        settleMs: 1_000,
      });
      second.signal('SIGTERM');
      expect(await second.exited()).toBe(0);

      // Everything answered before the stop was committed before the exit: no input was evaluated twice.
      expect(answeredBeforeStop).toBeGreaterThan(0);
      const counts = answersPerInput(results);
      expect(counts.size).toBe(1_500);
      expect([...counts.values()].every((count) => count === 1)).toBe(true);
    },
    SLOW,
  );
});
