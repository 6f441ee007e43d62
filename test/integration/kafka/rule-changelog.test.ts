import type { Admin } from 'kafkajs';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { changeKey, RuleChangelog } from '../../../src/kafka/rule-changelog.ts';
import { deleteTestTopics, eventually, type TestTopics, testKafka, uniqueTopics } from './support.ts';

describe('rule changelog', () => {
  const kafka = testKafka('rule-changelog-tests');
  let admin: Admin;
  let topics: TestTopics;

  beforeAll(async () => {
    admin = kafka.admin();
    await admin.connect();
    topics = uniqueTopics('changelog');
    await admin.createTopics({ topics: [{ topic: topics.changelog, numPartitions: 1 }], waitForLeaders: true });
  });
  afterAll(async () => {
    if (admin !== undefined) {
      await deleteTestTopics(admin, topics);
      await admin.disconnect();
    }
  });

  it('reads a change published before its consumer took a position, not only those that come after', async () => {
    // Published while this instance was starting: after its catalog's load read the store, before its changelog joined.
    const change = { revision: 41, rule_id: 7, change: 'update' as const, at: new Date().toISOString() };
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic: topics.changelog, messages: [{ key: changeKey(change), value: JSON.stringify(change) }] });
    await producer.disconnect();

    const targets: (number | undefined)[] = [];
    const changelog = new RuleChangelog({
      kafka,
      admin,
      topic: topics.changelog,
      groupId: `${topics.group}.changelog.a`,
      reload: async (revision) => {
        targets.push(revision);
      },
      logger: pino({ level: 'silent' }),
    });
    await changelog.start();
    try {
      expect(await eventually(() => targets.includes(41), 10_000)).toBe(true);
    } finally {
      await changelog.stop();
    }
  });
});
