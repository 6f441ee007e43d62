// Sends one fact message to the facts topic: node dev/produce.ts '{"facts":{"amount":150},"domain":"default"}' [--key K] [--topic T]
import { parseArgs } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import { factMessageSchema } from '../src/contracts/kafka-messages.ts';
import { printProcessWarnings } from '../src/logger.ts';
import { devBrokers, readEndpoints } from './endpoints-file.ts';

const USAGE = `usage: node dev/produce.ts '<fact message JSON>' [--key <key>] [--topic <topic>]
  e.g. node dev/produce.ts '{"facts":{"amount":150},"domain":"default"}'`;

async function main(): Promise<void> {
  printProcessWarnings();
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { key: { type: 'string' }, topic: { type: 'string' } } });
  const [text] = positionals;
  if (text === undefined || positionals.length > 1) throw new Error(USAGE);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new Error(`the message is not JSON (${(error as Error).message})\n${USAGE}`);
  }
  // The same schema the service applies, so a typo is caught here instead of landing in the dead-letter topic.
  const message = factMessageSchema.safeParse(json);
  if (!message.success)
    throw new Error(
      `the message is not a fact message: ${message.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ')}`,
    );

  const brokers = await devBrokers(process.env);
  const topic = values.topic ?? process.env.KAFKA_FACTS_TOPIC ?? (await readEndpoints())?.factsTopic ?? 'rules.facts';
  const kafka = new Kafka({ clientId: 'dev-produce', brokers, logLevel: logLevel.ERROR });
  const admin = kafka.admin();
  await admin.connect();
  const exists = (await admin.listTopics()).includes(topic);
  await admin.disconnect();
  if (!exists)
    throw new Error(`topic "${topic}" does not exist on ${brokers.join(',')}: the service creates it when it starts (npm run dev)`);
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  const [sent] = await producer.send({ topic, messages: [{ key: values.key ?? null, value: JSON.stringify(message.data) }] });
  await producer.disconnect();
  process.stdout.write(`sent to ${topic} partition ${sent?.partition} offset ${sent?.baseOffset}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
