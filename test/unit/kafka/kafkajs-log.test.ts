import { Writable } from 'node:stream';
import { logLevel } from 'kafkajs';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { kafkajsLevel, pinoLogCreator } from '../../../src/kafka/kafkajs-log.ts';

describe('kafkajsLevel', () => {
  it('maps pino levels to the kafkajs level that lets their lines through', () => {
    expect(kafkajsLevel('debug')).toBe(logLevel.DEBUG);
    expect(kafkajsLevel('trace')).toBe(logLevel.DEBUG);
    expect(kafkajsLevel('info')).toBe(logLevel.INFO);
    expect(kafkajsLevel('warn')).toBe(logLevel.WARN);
    expect(kafkajsLevel('error')).toBe(logLevel.ERROR);
    expect(kafkajsLevel('fatal')).toBe(logLevel.ERROR);
    expect(kafkajsLevel('silent')).toBe(logLevel.NOTHING);
  });
});

describe('pinoLogCreator', () => {
  it('writes kafkajs entries through pino with their level, namespace and fields', () => {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(JSON.parse(String(chunk)));
        done();
      },
    });
    const log = pinoLogCreator(pino({ level: 'debug' }, sink))(logLevel.DEBUG);
    log({ namespace: 'Consumer', level: logLevel.WARN, label: 'WARN', log: { timestamp: 't', message: 'Crash', groupId: 'g' } });
    log({ namespace: 'Producer', level: logLevel.ERROR, label: 'ERROR', log: { timestamp: 't', message: 'Broken' } });
    log({ namespace: 'Admin', level: logLevel.INFO, label: 'INFO', log: { timestamp: 't', message: 'Hello' } });
    log({ namespace: 'Cluster', level: logLevel.DEBUG, label: 'DEBUG', log: { timestamp: 't', message: 'Detail' } });
    expect(lines.map((line) => [line.level, line.kafkajs, line.msg])).toEqual([
      [40, 'Consumer', 'Crash'],
      [50, 'Producer', 'Broken'],
      [30, 'Admin', 'Hello'],
      [20, 'Cluster', 'Detail'],
    ]);
    expect(lines[0]!.groupId).toBe('g');
    expect(lines[0]!.timestamp).toBeUndefined();
  });
});
