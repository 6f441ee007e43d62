// Exactly-once output: one transactional producer per owned input partition; records and the input offset commit together.
import type { Kafka, Producer } from 'kafkajs';
import {
  type CommitPosition,
  type Delivery,
  type OutputTopics,
  orderedProducer,
  produceRequests,
  type ResultOutput,
} from './result-output.ts';

/** How long a commit in doubt is watched for its offsets to appear (milliseconds after the broker settles it, normally). */
const COMMITTED_OFFSET_WAIT_MS = 3_000;

/** Broker answers meaning a newer producer took the transactional id: this instance no longer owns the partition. */
const FENCED_ERRORS = new Set(['INVALID_PRODUCER_EPOCH', 'PRODUCER_FENCED']);

/** Whether the error, or one it wraps, says this producer was fenced. */
function isFenced(error: unknown): boolean {
  for (let current: unknown = error, depth = 0; current instanceof Error && depth < 8; current = current.cause, depth += 1) {
    const type = (current as { type?: unknown }).type;
    if (typeof type === 'string' && FENCED_ERRORS.has(type)) return true;
  }
  return false;
}

/**
 * The transactional id is stable per consumer group and input partition, so whichever instance owns the partition next
 * (after a rebalance or a crash) fences the previous owner's producer and aborts its open transaction at once. Topic
 * names hold no `:`, so the id reads back from its end: two deployments never share one (with dots, group `g.x` on
 * topic `y.facts` and group `g` on `x.y.facts` did, and fenced each other's every transaction).
 */
export function transactionalIdFor(groupId: string, topic: string, partition: number): string {
  return `${groupId}:${topic}:${partition}`;
}

/**
 * Consume-transform-produce in one Kafka transaction per processed run: results, dead letters and the consumer group's
 * offset (sendOffsets) commit atomically, so a reader with isolation read_committed sees exactly one result per input.
 */
export class TransactionalOutput implements ResultOutput {
  readonly mode = 'exactly-once';
  readonly #kafka: Kafka;
  readonly #topics: OutputTopics;
  readonly #groupId: string;
  readonly #inputTopic: string;
  readonly #producers = new Map<string, Promise<Producer>>();

  constructor(kafka: Kafka, topics: OutputTopics, groupId: string, inputTopic: string) {
    this.#kafka = kafka;
    this.#topics = topics;
    this.#groupId = groupId;
    this.#inputTopic = inputTopic;
  }

  async deliver(delivery: Delivery, _commit: CommitPosition): Promise<void> {
    const id = transactionalIdFor(this.#groupId, delivery.topic, delivery.partition);
    const producer = await this.#producer(id);
    const transaction = await producer.transaction();
    let committing = false;
    try {
      for (const request of produceRequests(this.#topics, delivery)) await transaction.sendBatch({ topicMessages: request, acks: -1 });
      await transaction.sendOffsets({
        consumerGroupId: this.#groupId,
        topics: [{ topic: delivery.topic, partitions: [{ partition: delivery.partition, offset: delivery.nextOffset }] }],
      });
      committing = true;
      await transaction.commit();
    } catch (error) {
      // A fenced or failed producer is dropped; the next run for this partition starts a fresh one (which fences in turn).
      await transaction.abort().catch(() => undefined);
      await this.#drop(id);
      // A commit whose answer was lost may have committed: answering the run again would commit its results twice. A
      // fenced one did not, and a fresh producer would fence the partition's new owner in turn.
      if (committing && !isFenced(error) && (await this.#committedPast(id, delivery))) return;
      throw error;
    }
  }

  /**
   * Whether the group's committed position has reached the run's end. A fresh producer under the transactional id first
   * settles the transaction in doubt (its initialisation waits for the coordinator to complete a commit it logged, and
   * aborts anything else); the group applies a committed transaction's offsets moments later, so the position is
   * watched for a while before the run counts as not committed. Any failure answers false: the run is retried.
   */
  async #committedPast(id: string, delivery: Delivery): Promise<boolean> {
    const admin = this.#kafka.admin();
    try {
      await this.#producer(id);
      await admin.connect();
      const until = Date.now() + COMMITTED_OFFSET_WAIT_MS;
      for (;;) {
        const [offsets] = await admin.fetchOffsets({ groupId: this.#groupId, topics: [delivery.topic] });
        const committed = offsets?.partitions.find((entry) => entry.partition === delivery.partition)?.offset;
        if (committed !== undefined && BigInt(committed) >= BigInt(delivery.nextOffset)) return true;
        if (Date.now() >= until) return false;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } catch {
      return false;
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  }

  async assigned(partitions: ReadonlySet<number>): Promise<void> {
    const owned = new Set([...partitions].map((partition) => transactionalIdFor(this.#groupId, this.#inputTopic, partition)));
    await Promise.all([...this.#producers.keys()].filter((id) => !owned.has(id)).map((id) => this.#drop(id)));
    // Fence the previous owners now, before this instance reads the partitions' committed offsets and processes them.
    await Promise.all([...owned].map((id) => this.#producer(id).catch(() => undefined)));
  }

  async close(): Promise<void> {
    await Promise.all([...this.#producers.keys()].map((id) => this.#drop(id)));
  }

  /** The partition's producer, connected and initialised under its transactional id: previous owners are fenced. */
  #producer(id: string): Promise<Producer> {
    let producer = this.#producers.get(id);
    if (producer === undefined) {
      const created = orderedProducer(this.#kafka, id);
      // kafkajs initialises the transactional id (which fences, and settles a transaction left open) only when a
      // transaction begins; an empty one ends without a request.
      producer = created
        .connect()
        .then(() => created.transaction())
        .then((transaction) => transaction.abort())
        .then(() => created);
      // A failed start is forgotten (and its connection closed) so the next delivery tries again.
      producer.catch(() => {
        if (this.#producers.get(id) === producer) this.#producers.delete(id);
        created.disconnect().catch(() => undefined);
      });
      this.#producers.set(id, producer);
    }
    return producer;
  }

  async #drop(id: string): Promise<void> {
    const producer = this.#producers.get(id);
    this.#producers.delete(id);
    if (producer === undefined) return;
    try {
      await (await producer).disconnect();
    } catch {
      // Already broken; nothing left to release.
    }
  }
}
