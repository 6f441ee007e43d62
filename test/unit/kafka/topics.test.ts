import type { Admin } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import {
  BROKER_DEFAULT_MAX_MESSAGE_BYTES,
  DLQ_MAX_MESSAGE_BYTES,
  maxMessageBytesOf,
  RESULT_HEADROOM_BYTES,
  resultBatchBytes,
  resultHeadroom,
  topicConfigs,
} from '../../../src/kafka/topics.ts';

describe('topicConfigs', () => {
  it('gives facts, results and dead letters the configured partitions and compacts the one-partition changelog', () => {
    const configs = topicConfigs({
      factsTopic: 'f',
      resultsTopic: 'r',
      dlqTopic: 'd',
      changelogTopic: 'c',
      partitions: 6,
      maxResultBytes: 1_000_000,
    });
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
    const configs = topicConfigs({
      factsTopic: 'same',
      resultsTopic: 'same',
      dlqTopic: 'd',
      changelogTopic: 'c',
      partitions: 1,
      maxResultBytes: 1_000_000,
    });
    expect(configs.map((config) => config.topic)).toEqual(['same', 'd', 'c']);
  });

  it('creates the results topic to take KAFKA_MAX_RESULT_BYTES with headers when that is past the broker default', () => {
    const plan = { factsTopic: 'f', resultsTopic: 'r', dlqTopic: 'd', changelogTopic: 'c', partitions: 1 };
    expect(topicConfigs({ ...plan, maxResultBytes: 1_000_000 }).find((config) => config.topic === 'r')).toEqual({
      topic: 'r',
      numPartitions: 1,
    });
    expect(1_000_000 + RESULT_HEADROOM_BYTES).toBeLessThanOrEqual(BROKER_DEFAULT_MAX_MESSAGE_BYTES);
    expect(topicConfigs({ ...plan, maxResultBytes: 5_000_000 }).find((config) => config.topic === 'r')).toEqual({
      topic: 'r',
      numPartitions: 1,
      configEntries: [{ name: 'max.message.bytes', value: String(5_000_000 + RESULT_HEADROOM_BYTES) }],
    });
  });
});

describe("the results topic's limits", () => {
  // Answers for topic r the value given, and for topic d 4096; the broker may list resources in any order.
  const describing = (value: string | undefined) =>
    ({
      describeConfigs: async () => ({
        resources: [
          { resourceName: 'd', configEntries: [{ configName: 'max.message.bytes', configValue: '4096' }] },
          { resourceName: 'r', configEntries: value === undefined ? [] : [{ configName: 'max.message.bytes', configValue: value }] },
        ],
      }),
    }) as unknown as Admin;

  it("reads each topic's max.message.bytes however small, and nothing when the broker does not say", async () => {
    expect(await maxMessageBytesOf(describing('20000'), ['r', 'd'])).toEqual([20_000, 4_096]);
    expect(await maxMessageBytesOf(describing(String(BROKER_DEFAULT_MAX_MESSAGE_BYTES)), ['r'])).toEqual([
      BROKER_DEFAULT_MAX_MESSAGE_BYTES,
    ]);
    expect(await maxMessageBytesOf(describing(undefined), ['r'])).toEqual([undefined]);
    expect(await maxMessageBytesOf(describing('lots'), ['r'])).toEqual([undefined]);
    expect(await maxMessageBytesOf(describing('20000'), ['x'])).toEqual([undefined]);
  });

  it('keeps 32 KiB for headers and the batch, or half of a smaller topic, and bounds a batch by the topic less 128 bytes', () => {
    expect(resultHeadroom(BROKER_DEFAULT_MAX_MESSAGE_BYTES)).toBe(RESULT_HEADROOM_BYTES);
    expect(resultHeadroom(20_000)).toBe(10_000);
    expect(resultBatchBytes(1_000_000, 20_000)).toBe(19_872);
    expect(resultBatchBytes(1_000_000)).toBe(1_000_000 + RESULT_HEADROOM_BYTES - 128);
  });
});
