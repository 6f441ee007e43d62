import { describe, expect, it } from 'vitest';
import { DLQ_MAX_MESSAGE_BYTES, topicConfigs } from '../../../src/kafka/topics.ts';

describe('topicConfigs', () => {
  it('gives facts, results and dead letters the configured partitions and compacts the one-partition changelog', () => {
    const configs = topicConfigs({ factsTopic: 'f', resultsTopic: 'r', dlqTopic: 'd', changelogTopic: 'c', partitions: 6 });
    expect(configs).toEqual([
      { topic: 'f', numPartitions: 6 },
      { topic: 'r', numPartitions: 6 },
      { topic: 'd', numPartitions: 6, configEntries: [{ name: 'max.message.bytes', value: String(DLQ_MAX_MESSAGE_BYTES) }] },
      {
        topic: 'c',
        numPartitions: 1,
        configEntries: [
          { name: 'cleanup.policy', value: 'compact' },
          { name: 'min.compaction.lag.ms', value: '60000' },
        ],
      },
    ]);
  });

  it('creates a topic named twice only once', () => {
    const configs = topicConfigs({ factsTopic: 'same', resultsTopic: 'same', dlqTopic: 'd', changelogTopic: 'c', partitions: 1 });
    expect(configs.map((config) => config.topic)).toEqual(['same', 'd', 'c']);
  });
});
