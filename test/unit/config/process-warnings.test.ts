import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger, logProcessWarnings, printProcessWarnings } from '../../../src/logger.ts';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: createLogger('info', stream) };
}

async function emitted(warning: string | Error, type?: string): Promise<void> {
  process.emitWarning(warning, type);
  // Warnings are delivered on the next tick.
  await new Promise((resolve) => setImmediate(resolve));
}

describe('process warnings', () => {
  const before = process.listeners('warning');
  afterEach(() => {
    process.removeAllListeners('warning');
    for (const listener of before) process.on('warning', listener);
  });

  it('are logged as JSON lines with their name and message', async () => {
    const { lines, logger } = capture();
    logProcessWarnings(logger);
    await emitted('something odd happened', 'CustomWarning');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 'warn',
      msg: 'process warning: something odd happened',
      warning: { name: 'CustomWarning', message: 'something odd happened' },
    });
  });

  it('leave out the negative-timeout warning kafkajs causes on every start', async () => {
    const { lines, logger } = capture();
    logProcessWarnings(logger);
    await emitted('-1795294483455 is a negative number.\nTimeout duration was set to 1.', 'TimeoutNegativeWarning');
    await emitted('kept', 'OtherWarning');
    expect(lines.map((line) => line.msg)).toEqual(['process warning: kept']);
  });

  it('print as Node does, without the negative-timeout warning, where no logger is set up', async () => {
    const printed: string[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        printed.push(chunk.toString());
        done();
      },
    });
    printProcessWarnings(stream);
    await emitted('-1795294483455 is a negative number.\nTimeout duration was set to 1.', 'TimeoutNegativeWarning');
    await emitted('kept', 'OtherWarning');
    expect(printed).toEqual([`(node:${process.pid}) OtherWarning: kept\n`]);
  });
});
