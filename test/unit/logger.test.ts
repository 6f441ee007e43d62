import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, MIN_SCRUBBED_LENGTH } from '../../src/logger.ts';

/** A destination that keeps every line written to it. */
function capture(): { lines: string[]; sink: Writable } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  return { lines, sink };
}

describe('createLogger', () => {
  it("never writes a client error's command arguments (AUTH's password), keeping the rest of the error", () => {
    const { lines, sink } = capture();
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

describe('createLogger with the configured API keys', () => {
  it('replaces a key wherever a line holds it (a request id, a message, a detail), also as JSON escapes it', () => {
    const { lines, sink } = capture();
    const plain = 'ADMINKEY0123456789abcdef';
    const quoted = 'ci"key\\0123456789';
    const logger = createLogger('debug', sink, [plain, quoted]);
    logger.child({ reqId: plain }).debug({ detail: `query: Unrecognized key: "${plain}"` }, 'request rejected');
    logger.info({ body: { note: quoted } }, `saw ${quoted}`);
    logger.info({ other: 'ADMINKEY' }, 'a part of a key is no key');
    const entries = lines.map((line) => JSON.parse(line));
    expect(lines.join('')).not.toContain(plain);
    expect(lines.join('')).not.toContain(JSON.stringify(quoted).slice(1, -1));
    expect(entries[0]).toMatchObject({ reqId: '[redacted]', detail: 'query: Unrecognized key: "[redacted]"', msg: 'request rejected' });
    expect(entries[1]).toMatchObject({ body: { note: '[redacted]' }, msg: 'saw [redacted]' });
    expect(entries[2]).toMatchObject({ other: 'ADMINKEY' });
  });

  it(`leaves keys shorter than ${MIN_SCRUBBED_LENGTH} characters in lines, where they broke timestamps, levels and numbers`, () => {
    const { lines, sink } = capture();
    const logger = createLogger('info', sink, ['0', 'info']);
    logger.info({ revision: 10 }, 'rules compiled');
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 'info', revision: 10, msg: 'rules compiled' });
  });
});
