import { Writable } from 'node:stream';
import Fastify, { LogController } from 'fastify';
import { describe, expect, it, vi } from 'vitest';
import { LazyRequestLogger } from '../../../src/http/request-logger.ts';
import { createLogger } from '../../../src/logger.ts';

function capturedLogger(level: 'info' | 'warn' = 'info') {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(JSON.parse(chunk.toString('utf8')));
      callback();
    },
  });
  return { logger: createLogger(level, destination), lines };
}

describe('LazyRequestLogger', () => {
  it('builds the child logger only when the first line is written, and only once', () => {
    const { logger, lines } = capturedLogger();
    const child = vi.spyOn(logger, 'child');
    const lazy = new LazyRequestLogger(logger, { reqId: 'req-1' }, {});
    expect(child).not.toHaveBeenCalled();
    lazy.info({ error_code: 'NOT_FOUND' }, 'request rejected');
    lazy.error('second');
    expect(child).toHaveBeenCalledTimes(1);
    expect(lines).toMatchObject([
      { level: 'info', reqId: 'req-1', error_code: 'NOT_FOUND', msg: 'request rejected', service: 'rules-evaluation-service' },
      { level: 'error', reqId: 'req-1', msg: 'second' },
    ]);
  });

  it('writes what the child would: levels filter, credentials are redacted', () => {
    const { logger, lines } = capturedLogger('warn');
    const lazy = new LazyRequestLogger(logger, { reqId: 'req-2' }, {});
    lazy.debug('dropped');
    lazy.warn({ req: { headers: { authorization: 'Bearer secret' } } }, 'kept');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ reqId: 'req-2', msg: 'kept', req: { headers: { authorization: '[redacted]' } } });
  });

  it('builds no child for a line below the level', () => {
    const { logger, lines } = capturedLogger('warn');
    const child = vi.spyOn(logger, 'child');
    const lazy = new LazyRequestLogger(logger, { reqId: 'req-3' }, {});
    lazy.debug({ error_code: 'VALIDATION_ERROR' }, 'request rejected');
    lazy.info('dropped too');
    expect(child).not.toHaveBeenCalled();
    expect(lines).toEqual([]);
    new LazyRequestLogger(logger, { reqId: 'req-4' }, { level: 'debug' }).debug('kept: the route logs at debug');
    expect(lines).toMatchObject([{ reqId: 'req-4', msg: 'kept: the route logs at debug' }]);
  });

  it('reports the level the child would have', () => {
    const { logger } = capturedLogger('warn');
    expect(new LazyRequestLogger(logger, {}, {}).level).toBe('warn');
    expect(new LazyRequestLogger(logger, {}, { level: 'debug' }).level).toBe('debug');
    const lazy = new LazyRequestLogger(logger, {}, {});
    lazy.level = 'error';
    expect(lazy.level).toBe('error');
    expect(logger.level).toBe('warn');
  });

  it('gives Fastify requests a logger that carries the request id', async () => {
    const { logger, lines } = capturedLogger();
    const app = Fastify({
      loggerInstance: logger,
      logController: new LogController({ disableRequestLogging: true }),
      requestIdHeader: 'x-request-id',
      childLoggerFactory: (parent, bindings, options) => new LazyRequestLogger(parent, bindings, options),
    });
    app.get('/', async (request) => {
      request.log.info('handled');
      return { ok: true };
    });
    await app.inject({ method: 'GET', url: '/', headers: { 'x-request-id': 'abc' } });
    await app.close();
    expect(lines.filter((line) => line.msg === 'handled')).toMatchObject([{ reqId: 'abc' }]);
  });
});
