import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';

describe('createLogger', () => {
  it("never writes a client error's command arguments (AUTH's password), keeping the rest of the error", () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString('utf8'));
        done();
      },
    });
    const logger = createLogger('info', sink);
    const error = Object.assign(new Error('WRONGPASS invalid username-password pair'), {
      command: { name: 'hello', args: ['3', 'AUTH', 'nobody', 's3cret'] },
    });
    logger.warn({ err: error }, 'Redis connection error');
    const entry = JSON.parse(lines.join(''));
    expect(JSON.stringify(entry)).not.toContain('s3cret');
    expect(entry.err).toMatchObject({
      message: 'WRONGPASS invalid username-password pair',
      command: { name: 'hello', args: '[redacted]' },
    });
  });
});
