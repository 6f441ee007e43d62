// Redis down: every operation answers UNAVAILABLE (retryable) and the store recovers by itself when Redis returns.

import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { AppError, isRetryable } from '../../../src/errors.ts';
import { describeRedisError } from '../../../src/sessions/redis-errors.ts';
import { openRedisSessionStore } from '../../../src/sessions/redis-session-store.ts';
import { killRedisServer, startRedisServer } from '../../helpers/redis-server.ts';
import { startTcpProxy } from '../../helpers/tcp-proxy.ts';

const T0 = Date.parse('2026-01-01T00:00:00Z');

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

async function errorOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (e: unknown) => e,
  );
}

async function eventually(check: () => Promise<boolean>): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('condition never became true');
}

describe('Redis session store when Redis is away', () => {
  const children: ChildProcess[] = [];
  afterAll(async () => {
    for (const child of children) await killRedisServer(child);
  });

  it('answers UNAVAILABLE when nothing listens on the port', async () => {
    const port = await freePort();
    const store = await openRedisSessionStore({ url: `redis://127.0.0.1:${port}`, keyPrefix: 'x:', connectTimeoutMs: 200 });
    try {
      const error = await errorOf(store.create({ id: 's1', rulesetId: 'rs', ttlSeconds: 60, now: T0 }));
      expect(error).toBeInstanceOf(AppError);
      expect((error as AppError).code).toBe('UNAVAILABLE');
      expect(isRetryable(error)).toBe(true);
      expect((error as AppError).toBody()).toEqual({
        detail: 'Session store (Redis) is unavailable; try again later.',
        error_code: 'UNAVAILABLE',
      });
      expect(((await errorOf(store.get('s1'))) as AppError).code).toBe('UNAVAILABLE');
      expect(((await errorOf(store.delete('s1'))) as AppError).code).toBe('UNAVAILABLE');
      const add = { factId: 'f', fact: {}, eventTimeMs: T0, contributions: [], specs: [], now: T0, maxFacts: 10, fire: () => [] };
      expect(((await errorOf(store.addFact('s1', add))) as AppError).code).toBe('UNAVAILABLE');
      expect(((await errorOf(store.retractFact('s1', 'f', { specs: [], now: T0, fire: () => [] }))) as AppError).code).toBe('UNAVAILABLE');
      expect(await store.ping()).toBe(false);
    } finally {
      await store.close();
    }
  });

  it('fails while Redis is stopped and serves again once it restarts, without a new store', async () => {
    const port = await freePort();
    children.push(await startRedisServer(port, ['--appendonly', 'no']));
    let reconnects = 0;
    const store = await openRedisSessionStore({
      url: `redis://127.0.0.1:${port}`,
      keyPrefix: 'x:',
      connectTimeoutMs: 500,
      onReconnect: () => {
        reconnects += 1;
      },
    });
    try {
      await store.create({ id: 'before', rulesetId: 'rs', ttlSeconds: 60, now: T0 });
      const fact = (factId: string) => ({
        factId,
        fact: { factId },
        eventTimeMs: T0,
        contributions: [{ accumulatorId: 'n', value: 1 }],
        specs: [{ id: 'n', fn: 'count' as const }],
        now: T0,
        maxFacts: 10,
        fire: () => [],
      });
      // The store now holds a copy of the session's working memory too.
      expect(await store.addFact('before', fact('a'))).toMatchObject({ factCount: 1, aggregates: { n: 1 } });
      expect(await store.get('before')).toMatchObject({ id: 'before', factCount: 1 });

      const first = children.pop();
      if (first) await killRedisServer(first);
      await eventually(async () => !(await store.ping()));
      const error = await errorOf(store.get('before'));
      expect((error as AppError).code).toBe('UNAVAILABLE');

      expect(reconnects).toBe(0);
      children.push(await startRedisServer(port, ['--appendonly', 'no']));
      await eventually(() => store.ping());
      // Told once, when the connection is ready again, so the end of an outage is logged as well as its errors.
      expect(reconnects).toBe(1);
      // The restarted server kept nothing (--save ''): the old session is gone, new ones work.
      expect(await store.get('before')).toBeUndefined();
      // Nor does a write: the copy of a session Redis lost is never written back.
      expect(await store.addFact('before', fact('b'))).toBeUndefined();
      expect(await store.get('before')).toBeUndefined();
      await store.create({ id: 'after', rulesetId: 'rs', ttlSeconds: 60, now: T0 });
      const added = await store.addFact('after', {
        factId: 'f',
        fact: { a: 1 },
        eventTimeMs: T0,
        contributions: [{ accumulatorId: 'n', value: 1 }],
        specs: [{ id: 'n', fn: 'count' }],
        now: T0,
        maxFacts: 10,
        fire: () => [],
      });
      expect(added).toMatchObject({ factCount: 1, aggregates: { n: 1 } });
    } finally {
      await store.close();
    }
  });

  it('fails a call Redis leaves unanswered on an open connection as UNAVAILABLE after the command timeout, and loses nothing', async () => {
    const proxy = await startTcpProxy(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
    const store = await openRedisSessionStore({
      url: proxy.url,
      keyPrefix: `test:${randomUUID()}:`,
      connectTimeoutMs: 2_000,
      commandTimeoutMs: 300,
    });
    const specs = [{ id: 'n', fn: 'count' as const }];
    const fact = (factId: string, now: number) => ({
      factId,
      fact: { factId },
      eventTimeMs: now,
      contributions: [{ accumulatorId: 'n', value: 1 }],
      specs,
      now,
      maxFacts: 10,
      fire: () => [],
    });
    try {
      await store.create({ id: 's', rulesetId: 'rs-1', ttlSeconds: 60, now: T0 });
      expect(await store.addFact('s', fact('a', T0))).toMatchObject({ factCount: 1, aggregates: { n: 1 } });
      // Redis gets the write but its answer is held back well past the timeout, the connection staying open.
      proxy.delayReplies(1_500);
      const started = Date.now();
      const unanswered = await errorOf(store.addFact('s', fact('b', T0 + 1)));
      expect((unanswered as AppError).code).toBe('UNAVAILABLE');
      expect(Date.now() - started).toBeLessThan(1_400);
      expect(await store.ping()).toBe(false);
      proxy.delayReplies(0);
      // Sent again once Redis answers: the write had been applied, so it is a duplicate, counted once.
      await eventually(() => store.ping());
      expect(await store.addFact('s', fact('b', T0 + 1))).toMatchObject({ duplicate: true, factCount: 2, aggregates: { n: 2 } });
      expect(await store.addFact('s', fact('c', T0 + 2))).toMatchObject({ factCount: 3, aggregates: { n: 3 } });
      await store.delete('s');
    } finally {
      await store.close();
      proxy.close();
    }
  });

  it('fails a write whose reply a dropped connection lost as UNAVAILABLE, never answering it as if another had written', async () => {
    const proxy = await startTcpProxy(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
    const store = await openRedisSessionStore({ url: proxy.url, keyPrefix: `test:${randomUUID()}:`, connectTimeoutMs: 2_000 });
    const specs = [{ id: 'n', fn: 'count' as const }];
    const fire = (aggregates: Record<string, number | null>) => ((aggregates.n ?? 0) >= 1 ? [7] : []);
    try {
      await store.create({ id: 's', rulesetId: 'rs-1', ttlSeconds: 60, now: T0 });
      const fact = {
        factId: 'x',
        fact: { a: 1 },
        eventTimeMs: T0,
        contributions: [{ accumulatorId: 'n', value: 1 }],
        specs,
        maxFacts: 10,
        fire,
      };
      expect((await store.addFact('s', { ...fact, now: T0 }))?.change).toEqual({ activated: [7], deactivated: [] });
      proxy.dropNextReply();
      const lost = await errorOf(store.retractFact('s', 'x', { specs, now: T0 + 1, fire }));
      expect(lost).toBeInstanceOf(AppError);
      expect((lost as AppError).code).toBe('UNAVAILABLE');
      // Redis applied it: once the store is connected again, the session says so, and the retraction is not redone.
      await eventually(() => store.ping());
      expect(await store.get('s')).toMatchObject({ factCount: 0, version: 2, firedRules: [] });
      proxy.dropNextReply();
      const created = await errorOf(store.create({ id: 's2', rulesetId: 'rs-1', ttlSeconds: 60, now: T0 }));
      expect((created as AppError).code).toBe('UNAVAILABLE');
      await eventually(() => store.ping());
      await store.delete('s');
      await store.delete('s2');
    } finally {
      await store.close();
      proxy.close();
    }
  });

  it('closes without waiting the command timeout for a Redis that stopped answering (a shutdown must not hang on it)', async () => {
    const port = await freePort();
    const frozen = await startRedisServer(port);
    children.push(frozen);
    const store = await openRedisSessionStore({
      url: `redis://127.0.0.1:${port}`,
      keyPrefix: `test:${randomUUID()}:`,
      connectTimeoutMs: 2_000,
      commandTimeoutMs: 120_000,
    });
    expect(await store.ping()).toBe(true);
    // Frozen, not gone: the connection stays open and nothing is answered, as a server stalled or a network away.
    frozen.kill('SIGSTOP');
    try {
      const closed = await Promise.race([
        store.close().then(() => 'closed'),
        new Promise((resolve) => setTimeout(resolve, 30_000, 'waiting')),
      ]);
      expect(closed).toBe('closed');
    } finally {
      frozen.kill('SIGCONT');
    }
  });

  it("reports a server that knows no AUTH without quoting REDIS_URL's password back", async () => {
    const port = await freePort();
    // AUTH and HELLO renamed away, as hardened servers and some proxies have it.
    const renamed = await startRedisServer(port, ['--rename-command', 'AUTH', '', '--rename-command', 'HELLO', '']);
    const url = `redis://app:s3cret%2Fpass@127.0.0.1:${port}`;
    const errors: Error[] = [];
    try {
      const store = await openRedisSessionStore({ url, keyPrefix: 'x:', connectTimeoutMs: 500, onError: (error) => errors.push(error) });
      await eventually(async () => errors.length > 0);
      await store.close();
      // The server quotes the command's arguments, and so does ioredis's error: the log line must not.
      expect(errors.some((error) => error.message.includes('s3cret/pass'))).toBe(true);
      for (const error of errors) {
        const line = describeRedisError(error, url);
        expect(line).not.toContain('s3cret/pass');
      }
      expect(describeRedisError(errors[0]!, url)).toMatch(/unknown command 'auth'.*\[redacted\]/i);
    } finally {
      await killRedisServer(renamed);
    }
  });
});
