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

  /** A changelog following `topic` in a group of its own, and the revisions it asked its catalog to reload to. */
  function following(topic: string, groupId: string, logger = pino({ level: 'silent' })) {
    const targets: (number | undefined)[] = [];
    const changelog = new RuleChangelog({
      kafka,
      admin,
      topic,
      groupId,
      reload: async (revision) => {
        targets.push(revision);
      },
      logger,
    });
    return { changelog, targets };
  }

  it('reads a change published before its consumer took a position, not only those that come after', async () => {
    // Published while this instance was starting: after its catalog's load read the store, before its changelog joined.
    const change = { revision: 41, rule_id: 7, change: 'update' as const, at: new Date().toISOString() };
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic: topics.changelog, messages: [{ key: changeKey(change), value: JSON.stringify(change) }] });
    await producer.disconnect();

    const { changelog, targets } = following(topics.changelog, `${topics.group}.changelog.a`);
    await changelog.start();
    try {
      expect(await eventually(() => targets.includes(41), 10_000)).toBe(true);
    } finally {
      await changelog.stop();
    }
  });

  it('starts its consumer again after a crash kafkajs does not restart, and still follows the changes', async () => {
    // The first entry that is not a rule change makes the logger throw a TypeError inside the batch handler: kafkajs
    // treats that as unrecoverable and leaves the consumer stopped, as after a broker restart's "no group coordinator".
    const logger = pino({ level: 'silent' });
    const warn = logger.warn.bind(logger);
    let injected = false;
    logger.warn = ((...args: Parameters<typeof warn>) => {
      if (!injected && String(args.at(-1)).startsWith('skipping a rule changelog entry')) {
        injected = true;
        throw new TypeError('injected crash');
      }
      return warn(...args);
    }) as typeof logger.warn;
    const own = uniqueTopics('changelog-crash');
    await admin.createTopics({ topics: [{ topic: own.changelog, numPartitions: 1 }], waitForLeaders: true });
    const { changelog, targets } = following(own.changelog, `${own.group}.changelog.b`, logger);
    await changelog.start();
    const producer = kafka.producer();
    await producer.connect();
    try {
      await producer.send({ topic: own.changelog, messages: [{ key: 'garbage', value: 'not a change' }] });
      expect(await eventually(() => injected, 10_000)).toBe(true);
      const change = { revision: 77, rule_id: 3, change: 'create' as const, at: new Date().toISOString() };
      await producer.send({ topic: own.changelog, messages: [{ key: changeKey(change), value: JSON.stringify(change) }] });
      expect(await eventually(() => targets.includes(77), 20_000)).toBe(true);
    } finally {
      await producer.disconnect();
      await changelog.stop();
      await deleteTestTopics(admin, own);
    }
  });

  it('makes its topic again, compacted, when it is deleted under it, and follows the changes published there after', async () => {
    const own = uniqueTopics('changelog-deleted');
    await admin.createTopics({ topics: [{ topic: own.changelog, numPartitions: 1 }], waitForLeaders: true });
    const { changelog, targets } = following(own.changelog, `${own.group}.changelog.c`);
    await changelog.start();
    const producer = kafka.producer();
    try {
      // Made without compaction here; the changelog makes it again as it makes it at start-up, compacted.
      const policy = async () => {
        const described = await admin
          .describeConfigs({ resources: [{ type: 2, name: own.changelog, configNames: ['cleanup.policy'] }], includeSynonyms: false })
          .catch(() => undefined);
        return described?.resources[0]?.configEntries.find((entry) => entry.configName === 'cleanup.policy')?.configValue;
      };
      expect(await policy()).toBe('delete');
      await admin.deleteTopics({ topics: [own.changelog] });
      expect(await eventually(async () => (await policy()) === 'compact', 30_000, 200)).toBe(true);
      await producer.connect();
      const change = { revision: 91, rule_id: 4, change: 'update' as const, at: new Date().toISOString() };
      await producer.send({ topic: own.changelog, messages: [{ key: changeKey(change), value: JSON.stringify(change) }] });
      expect(await eventually(() => targets.includes(91), 30_000)).toBe(true);
    } finally {
      await producer.disconnect();
      await changelog.stop();
      await deleteTestTopics(admin, own);
    }
  });
});
