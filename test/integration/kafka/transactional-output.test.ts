import type { Admin, Kafka, Producer, ProducerConfig, Transaction } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Delivery } from '../../../src/kafka/result-output.ts';
import { TransactionalOutput } from '../../../src/kafka/transactional-output.ts';
import { collect, deleteTestTopics, eventually, type TestTopics, testKafka, uniqueTopics } from './support.ts';

/**
 * What happens to the next commit: it fails after the broker committed (its answer lost), or before anything reached
 * the broker, or it waits for a gate to open first.
 */
type CommitFault = 'answer-lost' | 'never-sent' | { reached: () => void; gate: Promise<void> } | undefined;

/**
 * The real broker behind a client whose next transaction commit fails once, as when the connection drops around the
 * EndTxn request: the commit itself happens (or not) on the broker, only the answer is replaced by an error.
 */
function faultyKafka(kafka: Kafka, fault: { next: CommitFault }): Kafka {
  const wrapTransaction = (transaction: Transaction): Transaction =>
    Object.assign(Object.create(transaction) as Transaction, {
      commit: async () => {
        const injected = fault.next;
        fault.next = undefined;
        if (injected === 'never-sent') throw new Error('Closed connection');
        if (typeof injected === 'object') {
          injected.reached();
          await injected.gate;
        }
        await transaction.commit();
        if (injected === 'answer-lost') throw new Error('Closed connection');
      },
    });
  const wrapProducer = (producer: Producer): Producer =>
    Object.assign(Object.create(producer) as Producer, {
      transaction: async () => wrapTransaction(await producer.transaction()),
    });
  return Object.assign(Object.create(kafka) as Kafka, {
    producer: (config?: ProducerConfig) => wrapProducer(kafka.producer(config)),
    admin: () => kafka.admin(),
  });
}

describe('exactly-once output when a commit fails', () => {
  const kafka = testKafka('transactional-output-tests');
  let admin: Admin;
  let topics: TestTopics;

  beforeAll(async () => {
    admin = kafka.admin();
    await admin.connect();
    topics = uniqueTopics('eos-commit');
    await admin.createTopics({
      topics: [topics.facts, topics.results, topics.dlq].map((topic) => ({ topic, numPartitions: 1 })),
      waitForLeaders: true,
    });
  });
  afterAll(async () => {
    if (admin !== undefined) {
      await deleteTestTopics(admin, topics);
      await admin.disconnect();
    }
  });

  const delivery = (offset: number): Delivery => ({
    topic: topics.facts,
    partition: 0,
    results: [{ key: `k-${offset}`, value: JSON.stringify({ answers: offset }) }],
    deadLetters: [],
    nextOffset: String(offset + 1),
  });
  const committedOffset = async (): Promise<string | undefined> => {
    const [offsets] = await admin.fetchOffsets({ groupId: topics.group, topics: [topics.facts] });
    return offsets?.partitions.find((entry) => entry.partition === 0)?.offset;
  };
  /** The committed offset once it reads `expected` (the group applies a transaction's offsets moments after it commits). */
  const committedOffsetBecomes = async (expected: string): Promise<string | undefined> => {
    await eventually(async () => (await committedOffset()) === expected, 5_000);
    return committedOffset();
  };
  const notUsed = async () => {
    throw new Error('exactly-once commits offsets in the transaction');
  };

  it('counts a run as delivered when the commit went through and only its answer was lost, and retries one that never went', async () => {
    const fault: { next: CommitFault } = { next: undefined };
    const output = new TransactionalOutput(
      faultyKafka(kafka, fault),
      { resultsTopic: topics.results, dlqTopic: topics.dlq },
      topics.group,
      topics.facts,
    );
    try {
      await output.assigned(new Set([0]));
      await output.deliver(delivery(0), notUsed);
      expect(await committedOffsetBecomes('1')).toBe('1');

      // Committed on the broker, answer lost: delivered, not answered again (which would commit its results twice).
      fault.next = 'answer-lost';
      await output.deliver(delivery(1), notUsed);
      expect(await committedOffsetBecomes('2')).toBe('2');

      // Never reached the broker: the run fails, its results are aborted and it is answered again.
      fault.next = 'never-sent';
      await expect(output.deliver(delivery(2), notUsed)).rejects.toThrow('Closed connection');
      expect(await committedOffset()).toBe('2');
      await output.deliver(delivery(2), notUsed);
      expect(await committedOffsetBecomes('3')).toBe('3');
    } finally {
      await output.close();
    }
    // A read_committed reader sees each run's result once.
    const received = await collect(kafka, [topics.results], (all) => all.length >= 3, { groupPrefix: topics.group, settleMs: 1_000 });
    expect(received.map((message) => JSON.parse(String(message.value)).answers)).toEqual([0, 1, 2]);
  });

  it("reports a run whose commit was fenced by the partition's new owner as not delivered, and leaves that owner working", async () => {
    const fenced = uniqueTopics('eos-fenced');
    await admin.createTopics({
      topics: [fenced.facts, fenced.results, fenced.dlq].map((topic) => ({ topic, numPartitions: 1 })),
      waitForLeaders: true,
    });
    const run = (offset: number, by: string): Delivery => ({
      topic: fenced.facts,
      partition: 0,
      results: [{ key: 'k', value: JSON.stringify({ answers: offset, by }) }],
      deadLetters: [],
      nextOffset: String(offset + 1),
    });
    const outputTopics = { resultsTopic: fenced.results, dlqTopic: fenced.dlq };
    const fault: { next: CommitFault } = { next: undefined };
    const first = new TransactionalOutput(faultyKafka(kafka, fault), outputTopics, fenced.group, fenced.facts);
    const next = new TransactionalOutput(kafka, outputTopics, fenced.group, fenced.facts);
    try {
      await first.assigned(new Set([0]));
      await first.deliver(run(0, 'first'), notUsed);
      // The first owner's next run waits at its commit while the partition moves to the next owner, which fences it.
      let open!: () => void;
      let reached!: () => void;
      const atCommit = new Promise<void>((resolve) => (reached = resolve));
      fault.next = { reached, gate: new Promise<void>((resolve) => (open = resolve)) };
      const stale = first.deliver(run(1, 'first'), notUsed).then(
        () => 'delivered',
        () => 'failed',
      );
      await atCommit;
      await next.assigned(new Set([0]));
      await next.deliver(run(1, 'next'), notUsed);
      open();
      expect(await stale).toBe('failed');
      // The fenced owner did not fence the next one back: its following run commits.
      await next.deliver(run(2, 'next'), notUsed);
    } finally {
      await first.close();
      await next.close();
    }
    const received = await collect(kafka, [fenced.results], (all) => all.length >= 3, { groupPrefix: fenced.group, settleMs: 1_000 });
    expect(received.map((message) => JSON.parse(String(message.value)))).toEqual([
      { answers: 0, by: 'first' },
      { answers: 1, by: 'next' },
      { answers: 2, by: 'next' },
    ]);
    await deleteTestTopics(admin, fenced);
  });
});
