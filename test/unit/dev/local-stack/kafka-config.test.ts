import { describe, expect, it } from 'vitest';
import { log4jProperties, randomClusterId, serverProperties } from '../../../../dev/local-stack/kafka-config.ts';

function parse(properties: string): Map<string, string> {
  return new Map(
    properties
      .trim()
      .split('\n')
      .map((line) => {
        const at = line.indexOf('=');
        return [line.slice(0, at), line.slice(at + 1)] as const;
      }),
  );
}

describe('serverProperties', () => {
  const settings = parse(serverProperties({ broker: 41000, controller: 41001 }, '/tmp/run/kafka/data'));

  it('describes one combined broker and controller in KRaft mode on the given loopback ports', () => {
    expect(settings.get('process.roles')).toBe('broker,controller');
    expect(settings.get('node.id')).toBe('1');
    expect(settings.get('controller.quorum.voters')).toBe('1@127.0.0.1:41001');
    expect(settings.get('listeners')).toBe('PLAINTEXT://127.0.0.1:41000,CONTROLLER://127.0.0.1:41001');
    expect(settings.get('advertised.listeners')).toBe('PLAINTEXT://127.0.0.1:41000');
    expect(settings.get('controller.listener.names')).toBe('CONTROLLER');
    expect(settings.get('log.dirs')).toBe('/tmp/run/kafka/data');
  });

  it('lets one replica satisfy the internal topics, so groups and transactions work on a single node', () => {
    expect(settings.get('offsets.topic.replication.factor')).toBe('1');
    expect(settings.get('transaction.state.log.replication.factor')).toBe('1');
    expect(settings.get('transaction.state.log.min.isr')).toBe('1');
    expect(settings.get('group.initial.rebalance.delay.ms')).toBe('0');
  });

  it('leaves topic creation to the application and the tests', () => {
    expect(settings.get('auto.create.topics.enable')).toBe('false');
  });

  it('writes one key=value per line and no key twice', () => {
    const lines = serverProperties({ broker: 1, controller: 2 }, '/d').trim().split('\n');
    expect(lines.every((line) => /^[a-z.]+=\S+$/.test(line))).toBe(true);
    expect(new Set(lines.map((line) => line.split('=')[0])).size).toBe(lines.length);
  });
});

describe('randomClusterId', () => {
  it('is 16 random bytes in URL-safe base64 without padding, never starting with a dash', () => {
    const ids = Array.from({ length: 200 }, randomClusterId);
    for (const id of ids) {
      expect(id).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/);
      expect(Buffer.from(id, 'base64url')).toHaveLength(16);
    }
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('log4jProperties', () => {
  it('sends every log line to the given file and none to the console', () => {
    const text = log4jProperties('/tmp/run/kafka/server.log');
    expect(text).toContain('log4j.rootLogger=INFO, file');
    expect(text).toContain('log4j.appender.file.File=/tmp/run/kafka/server.log');
    expect(text).not.toMatch(/ConsoleAppender/);
  });
});
