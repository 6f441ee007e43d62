// Creates the pipeline's topics at start-up when they are missing; existing topics are left as they are.
import type { Admin, ITopicConfig } from 'kafkajs';

export interface TopicPlan {
  factsTopic: string;
  resultsTopic: string;
  dlqTopic: string;
  changelogTopic: string;
  partitions: number;
}

/**
 * Largest record the dead-letter topic is created to take: twice the broker's default (1 MiB), so a dead letter (its
 * input's bytes unchanged plus the reason in headers) fits whatever input the facts topic took at that default.
 */
export const DLQ_MAX_MESSAGE_BYTES = 2 * 1_048_588;

/** Facts, results and dead letters share the partition count; the changelog is compacted and needs one partition for order. */
export function topicConfigs(plan: TopicPlan): ITopicConfig[] {
  const topics = [plan.factsTopic, plan.resultsTopic, plan.dlqTopic];
  const dlqEntries = [{ name: 'max.message.bytes', value: String(DLQ_MAX_MESSAGE_BYTES) }];
  return [
    ...[...new Set(topics)].map((topic) => ({
      topic,
      numPartitions: plan.partitions,
      ...(topic === plan.dlqTopic && topic !== plan.factsTopic ? { configEntries: dlqEntries } : {}),
    })),
    {
      topic: plan.changelogTopic,
      numPartitions: 1,
      configEntries: [
        { name: 'cleanup.policy', value: 'compact' },
        // Compaction keeps each rule's latest change; tombstones are not used.
        { name: 'min.compaction.lag.ms', value: '60000' },
      ],
    },
  ];
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
