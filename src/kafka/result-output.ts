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
  /** Most record bytes the results topic takes in one record batch (see resultBatchBytes); MAX_REQUEST_BYTES when larger. */
  resultBatchBytes?: number;
  /** Most record bytes the dead-letter topic takes in one record batch (see deadLetterBatchBytes); MAX_REQUEST_BYTES when larger. */
  deadLetterBatchBytes?: number;
}

/**
 * Most record bytes (keys, values, headers) one produce request carries. kafkajs sends a request's records for one
 * partition as one record batch, and the broker refuses a batch over max.message.bytes (1 MiB by default) for good: a
 * run of dead letters, which all keep their input's key and so its partition, would otherwise stop its partition.
 */
export const MAX_REQUEST_BYTES = 512 * 1024;

/** Per record beyond its key, value and headers (lengths, offsets, timestamps), counted generously. */
export const RECORD_OVERHEAD_BYTES = 64;

/**
 * The delivery's records as produce requests of at most MAX_REQUEST_BYTES each, and of at most what each topic takes in
 * one record batch when that is smaller (a record larger than that goes alone), in order, to be sent one after the
 * other: usually one request.
 */
export function produceRequests(topics: OutputTopics, delivery: Delivery): TopicMessages[][] {
  const requests: TopicMessages[][] = [];
  let request: TopicMessages[] = [];
  let bytes = 0;
  const append = (topic: string, messages: Message[], topicBatchBytes: number | undefined) => {
    // A topic that takes smaller batches than a request (its max.message.bytes) bounds its part of every request.
    const maxTopicBytes = Math.min(MAX_REQUEST_BYTES, topicBatchBytes ?? MAX_REQUEST_BYTES);
    let current: TopicMessages | undefined;
    let topicBytes = 0;
    for (const message of messages) {
      const size = recordBytes(message);
      if ((bytes > 0 && bytes + size > MAX_REQUEST_BYTES) || (topicBytes > 0 && topicBytes + size > maxTopicBytes)) {
        requests.push(request);
        request = [];
        bytes = 0;
        topicBytes = 0;
        current = undefined;
      }
      if (current === undefined) {
        current = { topic, messages: [] };
        request.push(current);
      }
      current.messages.push(message);
      bytes += size;
      topicBytes += size;
    }
  };
  append(topics.resultsTopic, delivery.results, topics.resultBatchBytes);
  append(topics.dlqTopic, delivery.deadLetters, topics.deadLetterBatchBytes);
  if (request.length > 0) requests.push(request);
  return requests;
}

/** Bytes a record takes in a batch: key, value, headers and the per-record overhead. */
export function recordBytes(message: Message): number {
  return RECORD_OVERHEAD_BYTES + byteLength(message.key) + byteLength(message.value) + headerBytes(message);
}

/** Per header on the wire beyond its name and value: their two length varints, at most 5 bytes each. */
const HEADER_OVERHEAD_BYTES = 10;

/** Bytes of a record's headers on the wire: a header repeated under one name (an array) sends the name with each value. */
export function headerBytes(message: Message): number {
  let bytes = 0;
  for (const name in message.headers) {
    const nameBytes = Buffer.byteLength(name) + HEADER_OVERHEAD_BYTES;
    const value = message.headers[name];
    if (Array.isArray(value)) for (const item of value) bytes += nameBytes + byteLength(item);
    else bytes += nameBytes + byteLength(value);
  }
  return bytes;
}

/** Bytes a key, value or header value takes on the wire (a string as UTF-8). */
export function byteLength(value: string | Buffer | null | undefined): number {
  if (value === null || value === undefined) return 0;
  return typeof value === 'string' ? Buffer.byteLength(value) : value.length;
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
 * At-least-once: results and dead letters go out in batched produce requests (acks=all, usually one); only after the
 * broker acknowledges them is the input offset committed. A crash in between replays the run, so nothing is lost and duplicates are possible.
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
    // One request at a time: with one in flight and idempotence, records keep their order across requests too.
    for (const request of produceRequests(this.#topics, delivery)) await this.#producer.sendBatch({ topicMessages: request, acks: -1 });
    await commit(delivery.topic, delivery.partition, delivery.nextOffset);
  }

  async assigned(): Promise<void> {}

  async close(): Promise<void> {
    await this.#producer.disconnect();
  }
}
