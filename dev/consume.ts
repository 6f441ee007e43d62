// Prints every message of a topic as one JSON line, from the beginning, until Ctrl-C: node dev/consume.ts [topic]
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import { printProcessWarnings } from '../src/logger.ts';
import { devBrokers, readEndpoints } from './endpoints-file.ts';

async function main(): Promise<void> {
  printProcessWarnings();
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { latest: { type: 'boolean', default: false } } });
  if (positionals.length > 1) throw new Error('usage: node dev/consume.ts [topic] [--latest]   (default topic: the results topic)');
  const brokers = await devBrokers(process.env);
  const topic = positionals[0] ?? process.env.KAFKA_RESULTS_TOPIC ?? (await readEndpoints())?.resultsTopic ?? 'rules.results';
  const kafka = new Kafka({ clientId: 'dev-consume', brokers, logLevel: logLevel.ERROR });

  // The service creates its topics when it starts; until then there is nothing to subscribe to.
  const admin = kafka.admin();
  await admin.connect();
  for (let announced = false; !(await admin.listTopics()).includes(topic); announced = true) {
    if (!announced) process.stderr.write(`waiting for topic "${topic}" to be created (is the service running?)\n`);
    await sleep(1_000);
  }
  await admin.disconnect();

  // A throwaway group: every run sees the whole topic and commits nothing anyone else reads.
  const consumer = kafka.consumer({ groupId: `dev-consume-${randomUUID()}` });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: !values.latest });
  const stop = async () => {
    await consumer.disconnect();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
  process.stderr.write(`reading ${topic} on ${brokers.join(',')} (Ctrl-C to stop)\n`);
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      const value = message.value?.toString('utf8');
      let parsed: unknown = value;
      try {
        parsed = value === undefined ? null : JSON.parse(value);
      } catch {
        // Not JSON (e.g. schema-registry framed bytes): printed as text.
      }
      const headers = Object.fromEntries(Object.entries(message.headers ?? {}).map(([name, header]) => [name, header?.toString()]));
      process.stdout.write(
        `${JSON.stringify({ partition, offset: message.offset, key: message.key?.toString() ?? null, headers, value: parsed })}\n`,
      );
    },
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
