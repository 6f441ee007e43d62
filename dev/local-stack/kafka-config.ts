// The single-node KRaft broker configuration: combined broker+controller, tuned to start fast and to support transactions.
import { randomBytes } from 'node:crypto';

export interface KafkaPorts {
  readonly broker: number;
  readonly controller: number;
}

/** A KRaft cluster id: 16 random bytes in URL-safe base64 without padding, as `kafka-storage random-uuid` prints. */
export function randomClusterId(): string {
  while (true) {
    const id = randomBytes(16).toString('base64url');
    // Kafka's own generator rejects ids that start with '-' because they read as command-line flags.
    if (!id.startsWith('-')) return id;
  }
}

export function serverProperties(ports: KafkaPorts, logDir: string, host = '127.0.0.1'): string {
  const settings: Record<string, string | number | boolean> = {
    'process.roles': 'broker,controller',
    'node.id': 1,
    'controller.quorum.voters': `1@${host}:${ports.controller}`,
    listeners: `PLAINTEXT://${host}:${ports.broker},CONTROLLER://${host}:${ports.controller}`,
    'advertised.listeners': `PLAINTEXT://${host}:${ports.broker}`,
    'controller.listener.names': 'CONTROLLER',
    'inter.broker.listener.name': 'PLAINTEXT',
    'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    'log.dirs': logDir,
    // The application creates its topics; tests create theirs through the helpers.
    'auto.create.topics.enable': false,
    'num.partitions': 1,
    'default.replication.factor': 1,
    'min.insync.replicas': 1,
    // One replica can satisfy every internal topic, so consumer groups and transactions (exactly-once) work.
    'offsets.topic.replication.factor': 1,
    'offsets.topic.num.partitions': 1,
    'transaction.state.log.replication.factor': 1,
    'transaction.state.log.min.isr': 1,
    'transaction.state.log.num.partitions': 1,
    'group.initial.rebalance.delay.ms': 0,
    // Small thread pools and buffers: a test broker on a two-core machine shares it with everything else.
    'num.network.threads': 2,
    'num.io.threads': 2,
    'background.threads': 2,
    'num.recovery.threads.per.data.dir': 1,
    'log.cleaner.threads': 1,
    'log.cleaner.dedupe.buffer.size': 4_194_304,
    'log.flush.interval.messages': '9223372036854775807',
    'delete.topic.enable': true,
  };
  return `${Object.entries(settings)
    .map(([key, value]) => `${key}=${value}`)
    .join('\n')}\n`;
}

/** reload4j configuration: everything to one file in the run folder, nothing to the console. */
export function log4jProperties(logFile: string): string {
  return [
    'log4j.rootLogger=INFO, file',
    'log4j.appender.file=org.apache.log4j.FileAppender',
    `log4j.appender.file.File=${logFile}`,
    'log4j.appender.file.layout=org.apache.log4j.PatternLayout',
    'log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n',
    'log4j.logger.kafka.request.logger=WARN',
    'log4j.logger.org.apache.kafka.controller=INFO',
    '',
  ].join('\n');
}
