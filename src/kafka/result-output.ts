// Writes a processed run's results and dead letters, then records the input position: the delivery contract lives here.
import type { Kafka, Message, Producer, TopicMessages } from 'kafkajs';
import { fastDefaultPartitioner } from './partitioner.ts';

export interface Delivery {
  topic: string;
  partition: number;
  results: Message[];
  deadLetters: Message[];
  /** The input offset consumption resumes from: the last handled offset + 1. */
  nextOffset: string;
}

/** Commits a consumer position through the running consumer (kafkajs commitOffsetsIfNecessary with explicit offsets). */
export type CommitPosition = (topic: string, partition: number, nextOffset: string) => Promise<void>;

export interface ResultOutput {
  readonly mode: 'at-least-once' | 'exactly-once';
  /** Resolves once the records are acknowledged and the input position is committed. */
  deliver(delivery: Delivery, commit: CommitPosition): Promise<void>;
  /** Called after each rebalance with the facts-topic partitions this instance now owns. */
  assigned(partitions: ReadonlySet<number>): Promise<void>;
  close(): Promise<void>;
}

export interface OutputTopics {
  resultsTopic: string;
  dlqTopic: string;
}

export function topicMessages(topics: OutputTopics, delivery: Delivery): TopicMessages[] {
  const batches: TopicMessages[] = [];
  if (delivery.results.length > 0) batches.push({ topic: topics.resultsTopic, messages: delivery.results });
  if (delivery.deadLetters.length > 0) batches.push({ topic: topics.dlqTopic, messages: delivery.deadLetters });
  return batches;
}

/**
 * Producer settings shared by both modes: idempotent with one request in flight, so broker retries neither duplicate nor
 * reorder; results land on the partition kafkajs's DefaultPartitioner (the Java client's) picks for their key.
 */
export function orderedProducer(kafka: Kafka, transactionalId?: string): Producer {
  return kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
    createPartitioner: fastDefaultPartitioner,
    ...(transactionalId === undefined ? {} : { transactionalId }),
  });
}

/**
 * At-least-once: results and dead letters go out in one batched produce (acks=all); only after the broker acknowledges
 * them is the input offset committed. A crash in between replays the run, so nothing is lost and duplicates are possible.
 */
export class AtLeastOnceOutput implements ResultOutput {
  readonly mode = 'at-least-once';
  readonly #producer: Producer;
  readonly #topics: OutputTopics;

  private constructor(producer: Producer, topics: OutputTopics) {
    this.#producer = producer;
    this.#topics = topics;
  }

  static async open(kafka: Kafka, topics: OutputTopics): Promise<AtLeastOnceOutput> {
    const producer = orderedProducer(kafka);
    await producer.connect();
    return new AtLeastOnceOutput(producer, topics);
  }

  async deliver(delivery: Delivery, commit: CommitPosition): Promise<void> {
    const batches = topicMessages(this.#topics, delivery);
    if (batches.length > 0) await this.#producer.sendBatch({ topicMessages: batches, acks: -1 });
    await commit(delivery.topic, delivery.partition, delivery.nextOffset);
  }

  async assigned(): Promise<void> {}

  async close(): Promise<void> {
    await this.#producer.disconnect();
  }
}
