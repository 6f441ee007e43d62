// Creates the pipeline's topics at start-up when they are missing; existing topics are left as they are.
import kafkajs, { type Admin, type ITopicConfig } from 'kafkajs';

// Not among the names Node finds in kafkajs's CommonJS exports: read from the module object.
const { ConfigResourceTypes } = kafkajs;

export interface TopicPlan {
  factsTopic: string;
  resultsTopic: string;
  dlqTopic: string;
  changelogTopic: string;
  partitions: number;
  /** KAFKA_MAX_RESULT_BYTES: the results topic is created to take a result that large. */
  maxResultBytes: number;
}

/**
 * Largest record the dead-letter topic is created to take: twice the broker's default (1 MiB), so a dead letter (its
 * input's bytes unchanged plus the reason in headers) fits whatever input the facts topic took at that default.
 */
export const DLQ_MAX_MESSAGE_BYTES = 2 * 1_048_588;

/** The broker's default `max.message.bytes`, which a topic created without the setting takes. */
export const BROKER_DEFAULT_MAX_MESSAGE_BYTES = 1_048_588;

/**
 * Bytes a result message takes beyond its key and value: its headers (those carried from the input) and the record
 * batch around it. The default KAFKA_MAX_RESULT_BYTES plus this fits the broker's default.
 */
export const RESULT_HEADROOM_BYTES = 32_768;

/** The room left for headers and the record batch in a topic taking this many bytes: 32 KiB, or half of a smaller topic. */
export function resultHeadroom(topicMaxMessageBytes: number): number {
  return Math.min(RESULT_HEADROOM_BYTES, Math.floor(topicMaxMessageBytes / 2));
}

/** The record batch around a produce request's records for one partition (61 bytes), counted generously. */
const RECORD_BATCH_OVERHEAD_BYTES = 128;

/**
 * Most record bytes (key, value, headers, per-record overhead) one batch to the results topic may hold: the topic's
 * max.message.bytes when the broker said, else the result limit plus RESULT_HEADROOM_BYTES (what it is created to take).
 */
export function resultBatchBytes(maxResultBytes: number, topicMaxMessageBytes?: number): number {
  return (topicMaxMessageBytes ?? maxResultBytes + RESULT_HEADROOM_BYTES) - RECORD_BATCH_OVERHEAD_BYTES;
}

/** Most record bytes one batch to the dead-letter topic may hold: its max.message.bytes when the broker said, else what it is created to take. */
export function deadLetterBatchBytes(topicMaxMessageBytes?: number): number {
  return (topicMaxMessageBytes ?? DLQ_MAX_MESSAGE_BYTES) - RECORD_BATCH_OVERHEAD_BYTES;
}

/** Facts, results and dead letters share the partition count; the changelog is compacted and needs one partition for order. */
export function topicConfigs(plan: TopicPlan): ITopicConfig[] {
  const topics = [plan.factsTopic, plan.resultsTopic, plan.dlqTopic];
  const dlqEntries = [{ name: 'max.message.bytes', value: String(DLQ_MAX_MESSAGE_BYTES) }];
  const resultBytes = plan.maxResultBytes + RESULT_HEADROOM_BYTES;
  const resultEntries = [{ name: 'max.message.bytes', value: String(resultBytes) }];
  return [
    ...[...new Set(topics)].map((topic) => ({
      topic,
      numPartitions: plan.partitions,
      ...(topic === plan.dlqTopic && topic !== plan.factsTopic ? { configEntries: dlqEntries } : {}),
      ...(topic === plan.resultsTopic && resultBytes > BROKER_DEFAULT_MAX_MESSAGE_BYTES ? { configEntries: resultEntries } : {}),
    })),
    changelogTopicConfig(plan.changelogTopic),
  ];
}

/** The rule changelog: compacted, one partition for order. */
export function changelogTopicConfig(topic: string): ITopicConfig {
  return {
    topic,
    numPartitions: 1,
    configEntries: [
      { name: 'cleanup.policy', value: 'compact' },
      // Compaction keeps each rule's latest change; tombstones are not used.
      { name: 'min.compaction.lag.ms', value: '60000' },
    ],
  };
}

/** Creates whichever topics do not exist yet. Two instances starting together may race: "already exists" is success. */
export async function ensureTopics(admin: Admin, plan: TopicPlan): Promise<string[]> {
  const existing = new Set(await admin.listTopics());
  const missing = topicConfigs(plan).filter((config) => !existing.has(config.topic));
  if (missing.length === 0) return [];
  try {
    await admin.createTopics({ topics: missing, waitForLeaders: true });
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
  }
  return missing.map((config) => config.topic);
}

function isAlreadyExists(error: unknown): boolean {
  const nested = (error as { errors?: { type?: unknown }[] } | null)?.errors;
  if (Array.isArray(nested) && nested.length > 0) return nested.every((inner) => inner.type === 'TOPIC_ALREADY_EXISTS');
  return (error as { type?: unknown } | null)?.type === 'TOPIC_ALREADY_EXISTS';
}

/**
 * Each topic's `max.message.bytes` (its own or the broker's default), in one request; undefined where the broker does
 * not say. A results or dead-letter topic made elsewhere may take less than the service sends: a record between the two
 * was refused by the broker on every retry and held its partition.
 */
export async function maxMessageBytesOf(admin: Admin, topics: readonly string[]): Promise<(number | undefined)[]> {
  const described = await admin.describeConfigs({
    resources: topics.map((name) => ({ type: ConfigResourceTypes.TOPIC, name, configNames: ['max.message.bytes'] })),
    includeSynonyms: false,
  });
  return topics.map((topic) => {
    const resource = described.resources.find((described) => described.resourceName === topic);
    const entry = resource?.configEntries.find((config) => config.configName === 'max.message.bytes');
    const bytes = Number(entry?.configValue);
    return Number.isSafeInteger(bytes) && bytes > 0 ? bytes : undefined;
  });
}
