import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { request } from 'node:http';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countStoredExecutions } from '../../../src/store/execution-batches.ts';
import { openStore } from '../../../src/store/index.ts';
import { createTempDataDir, createTestDatabase } from '../../helpers/databases.ts';
import { startTcpProxy } from '../../helpers/tcp-proxy.ts';

const MAIN = fileURLToPath(new URL('../../../src/main.ts', import.meta.url));
const PROBE = new URL('../../helpers/signal-listener-probe.ts', import.meta.url).href;

interface Service {
  child: ChildProcess;
  port: number;
  logs: string[];
  exit: Promise<number | null>;
}

/** Spawns `node src/main.ts` on a free port and waits until it listens. */
async function startService(env: Record<string, string>): Promise<Service> {
  const child = spawn(process.execPath, [MAIN], {
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', RULES_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: string[] = [];
  const exit = once(child, 'exit').then(([code]) => code as number | null);
  const port = await new Promise<number>((resolve, reject) => {
    let buffer = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      const lines = buffer.split('\n');
      buffer = lines.pop()!;
      for (const line of lines) {
        logs.push(line);
        const match = /Server listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(line);
        if (match !== null) resolve(Number(match[1]));
      }
    });
    child.stderr!.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
    void exit.then((code) => reject(new Error(`the service exited with ${code} before listening:\n${logs.join('\n')}`)));
  });
  return { child, port, logs, exit };
}

/** A raw HTTP request, so no client adds a Content-Type the test did not ask for. */
function send(port: number, method: string, path: string, body?: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('the service as a process (node src/main.ts)', () => {
  let dataDir: Awaited<ReturnType<typeof createTempDataDir>>;
  let service: Service;

  beforeAll(async () => {
    dataDir = await createTempDataDir();
    service = await startService({ RULES_DATA_DIR: dataDir.path, RULES_BODY_LIMIT: '4mb' });
  });
  afterAll(async () => {
    if (service.child.exitCode === null) service.child.kill('SIGKILL');
    await dataDir.remove();
  });

  it('warns at start-up that authentication is off', () => {
    const warning = service.logs.map((line) => JSON.parse(line)).find((entry) => entry.level === 'warn');
    expect(warning?.msg).toContain('RULES_API_KEYS is not set');
  });

  it('serves /health on the port it bound', async () => {
    const response = await send(service.port, 'GET', '/health');
    expect(response.status).toBe(200);
    expect(JSON.parse(response.body)).toEqual({ status: 'healthy', version: expect.any(String) });
  });

  it('answers a body sent without any Content-Type with 415', async () => {
    const response = await send(service.port, 'POST', '/api/v1/evaluate', '{"facts":{}}', { 'content-length': '12' });
    expect(response.status).toBe(415);
    expect(JSON.parse(response.body)).toEqual({
      detail: 'Request bodies must be sent with Content-Type: application/json.',
      error_code: 'UNSUPPORTED_MEDIA_TYPE',
    });
  });

  it('on SIGTERM, repeated and with SIGINT beside it, finishes the request in flight, writes every pending execution and exits 0', async () => {
    const single = JSON.parse(
      (await send(service.port, 'POST', '/api/v1/evaluate', '{"facts":{"amount":1}}', { 'content-type': 'application/json' })).body,
    );
    const facts = Array.from({ length: 10_000 }, (_, index) => ({ amount: index }));
    const bulkBody = JSON.stringify({ facts });
    const inFlight = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: service.port,
          method: 'POST',
          path: '/api/v1/evaluate/bulk',
          headers: { 'content-type': 'application/json' },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            text += chunk;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        },
      );
      req.on('error', reject);
      // The signal goes out once the whole request is on the wire and the server has begun on it.
      req.on('finish', () => setTimeout(() => service.child.kill('SIGTERM'), 200));
      req.end(bulkBody);
    });
    // More signals once the stop is under way, as when a process group and its supervisor both pass one on.
    service.child.stdout!.on('data', (chunk: Buffer) => {
      if (chunk.toString('utf8').includes('"msg":"shutting down') && service.child.kill('SIGTERM')) service.child.kill('SIGINT');
    });

    const response = await inFlight;
    expect(response.status).toBe(200);
    const results = (JSON.parse(response.body) as { results: { execution_id: string }[] }).results;
    expect(results).toHaveLength(10_000);
    expect(await service.exit).toBe(0);
    expect(service.logs.some((line) => line.includes('"msg":"stopped"'))).toBe(true);

    const store = await openStore({ dataDir: dataDir.path });
    try {
      const ids = [single.execution_id, results[0]!.execution_id, results[9_999]!.execution_id];
      for (const id of ids) expect(await store.executions.get(id), id).toMatchObject({ execution_id: id });
      expect(await countStoredExecutions(store.db)).toBe(10_001);
    } finally {
      await store.close();
    }
  });
});

describe('the service as a process with Redis sessions and Prometheus metrics', () => {
  let dataDir: Awaited<ReturnType<typeof createTempDataDir>>;
  let service: Service;
  const json = { 'content-type': 'application/json' };
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const keyPrefix = `test:${randomUUID()}:`;

  beforeAll(async () => {
    dataDir = await createTempDataDir();
    service = await startService({
      RULES_DATA_DIR: dataDir.path,
      REDIS_URL: redisUrl,
      REDIS_KEY_PREFIX: keyPrefix,
      RULES_METRICS: 'prometheus',
    });
  });
  afterAll(async () => {
    if (service.child.exitCode === null) service.child.kill('SIGKILL');
    await dataDir.remove();
  });

  it('keeps session keys under REDIS_KEY_PREFIX, so deployments sharing one Redis keep their sessions apart', async () => {
    const ruleset = JSON.parse(
      (await send(service.port, 'POST', '/api/v1/rulesets', JSON.stringify({ name: 'prefix', domain: `prefix-${Date.now()}` }), json)).body,
    );
    const session = JSON.parse(
      (await send(service.port, 'POST', '/api/v1/sessions', JSON.stringify({ ruleset_id: ruleset.id, ttl_seconds: 60 }), json)).body,
    );
    const redis = new Redis(redisUrl);
    try {
      expect(await redis.exists(`${keyPrefix}session:{${session.id}}:meta`)).toBe(1);
      expect(await redis.exists(`rules:session:{${session.id}}:meta`)).toBe(0);
      expect((await send(service.port, 'DELETE', `/api/v1/sessions/${session.id}`)).status).toBe(204);
      expect(await redis.exists(`${keyPrefix}session:{${session.id}}:meta`)).toBe(0);
    } finally {
      redis.disconnect();
    }
  });

  it('reports the session cache: the first write reads the session into a copy, the next ones use it', async () => {
    const ruleset = JSON.parse(
      (await send(service.port, 'POST', '/api/v1/rulesets', JSON.stringify({ name: 'cache', domain: `cache-${Date.now()}` }), json)).body,
    );
    const session = JSON.parse(
      (await send(service.port, 'POST', '/api/v1/sessions', JSON.stringify({ ruleset_id: ruleset.id, ttl_seconds: 60 }), json)).body,
    );
    for (const factId of ['a', 'b', 'c']) {
      const added = await send(
        service.port,
        'POST',
        `/api/v1/sessions/${session.id}/facts`,
        JSON.stringify({ fact_id: factId, event: {} }),
        json,
      );
      expect(added.status).toBe(200);
    }
    const metrics = await send(service.port, 'GET', '/api/v1/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.body).toContain('rules_session_cache_reads_total{outcome="cached"} 1');
    expect(metrics.body).toContain('rules_session_cache_reads_total{outcome="let_go"} 0');
    expect(metrics.body).toMatch(/^rules_session_cache_facts 3$/m);
    expect(metrics.body).toMatch(/^rules_session_cache_sessions 1$/m);
    expect((await send(service.port, 'DELETE', `/api/v1/sessions/${session.id}`)).status).toBe(204);
  });
});

describe('a stop signal with clients that never finish a request', () => {
  it('closes their connections instead of waiting on them, and exits 0 with every execution written', async () => {
    const dataDir = await createTempDataDir();
    // Well under Node's 60 s headers timeout: a stop that waited on these connections would exit 1 at this bound.
    const service = await startService({ RULES_DATA_DIR: dataDir.path, RULES_SHUTDOWN_TIMEOUT: '12s' });
    const json = { 'content-type': 'application/json' };
    const sockets: Socket[] = [];
    try {
      const answered = await send(service.port, 'POST', '/api/v1/evaluate', '{"facts":{"amount":1}}', json);
      expect(answered.status).toBe(200);
      const open = async (text: string) => {
        const socket = connect(service.port, '127.0.0.1');
        sockets.push(socket);
        socket.on('error', () => undefined);
        await once(socket, 'connect');
        if (text !== '') socket.write(text);
      };
      // A connection that never sends a request (a browser's preconnect), half a request's headers, half its body.
      await open('');
      await open('POST /api/v1/evaluate HTTP/1.1\r\nHost: x\r\n');
      await open('POST /api/v1/evaluate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"facts":');
      await new Promise((resolve) => setTimeout(resolve, 200));
      const closed = sockets.map((socket) => once(socket, 'close'));
      service.child.kill('SIGTERM');
      expect(await service.exit).toBe(0);
      await Promise.all(closed);
      const store = await openStore({ dataDir: dataDir.path });
      try {
        expect(await store.executions.get(JSON.parse(answered.body).execution_id)).toMatchObject({ source: 'http' });
      } finally {
        await store.close();
      }
    } finally {
      for (const socket of sockets) socket.destroy();
      if (service.child.exitCode === null) service.child.kill('SIGKILL');
      await dataDir.remove();
    }
  });
});

describe('a stop that runs out of time', () => {
  it('exits 1 naming the pending executions it could not write, when the database stops answering', async () => {
    const database = await createTestDatabase();
    const proxy = await startTcpProxy(database.url);
    const service = await startService({ DATABASE_URL: proxy.url, RULES_SHUTDOWN_TIMEOUT: '3s' });
    try {
      // From now on PostgreSQL's replies are held back: the records of these evaluations cannot be written.
      proxy.delayReplies(600_000);
      for (let index = 0; index < 5; index++) {
        const answer = await send(service.port, 'POST', '/api/v1/evaluate', '{"facts":{"amount":1}}', {
          'content-type': 'application/json',
        });
        expect(answer.status).toBe(200);
      }
      service.child.kill('SIGTERM');
      expect(await service.exit).toBe(1);
      const fatal = service.logs.map((line) => JSON.parse(line) as { level: string; msg: string }).find((entry) => entry.level === 'fatal');
      expect(fatal?.msg).toMatch(/^shutdown took too long; ([5-9]|\d{2,}) pending executions could not be written and are lost$/);
    } finally {
      if (service.child.exitCode === null) service.child.kill('SIGKILL');
      proxy.close();
      await database.drop();
    }
  });
});

describe('two instances on one PostgreSQL, without Kafka', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  const services: Service[] = [];
  const json = { 'content-type': 'application/json' };

  beforeAll(async () => {
    database = await createTestDatabase();
    // One at a time: the first runs the migrations.
    services.push(await startService({ DATABASE_URL: database.url }));
    services.push(await startService({ DATABASE_URL: database.url }));
  });
  afterAll(async () => {
    for (const service of services) if (service.child.exitCode === null) service.child.kill('SIGKILL');
    await database.drop();
  });

  it('evaluates with a rule created through the other instance within about a second', async () => {
    const [a, b] = services as [Service, Service];
    const rule = { name: 'big', condition_dsl: { type: 'condition', field: 'amount', op: '>', value: 10 }, action: 'review' };
    const created = await send(a.port, 'POST', '/api/v1/rules', JSON.stringify(rule), json);
    expect(created.status).toBe(201);
    const evaluate = async () =>
      JSON.parse((await send(b.port, 'POST', '/api/v1/evaluate', JSON.stringify({ facts: { amount: 20 } }), json)).body) as {
        actions: string[];
      };
    const started = Date.now();
    let actions: string[] = [];
    while (Date.now() - started < 5_000) {
      actions = (await evaluate()).actions;
      if (actions.length > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(actions).toEqual(['review']);
    expect(Date.now() - started).toBeLessThan(2_500);
  });
});

describe('start-up with a bad configuration', () => {
  it('exits 1 with a message naming every bad variable', async () => {
    const child = spawn(process.execPath, [MAIN], {
      env: { PATH: process.env.PATH ?? '', PORT: 'eighty', RULES_LOG_LEVEL: 'LOUD' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    const [code] = await once(child, 'exit');
    expect(code).toBe(1);
    expect(stderr).toContain('Invalid configuration:');
    expect(stderr).toContain('PORT: must be a whole number (got "eighty")');
    expect(stderr).toContain('RULES_LOG_LEVEL: must be one of');
  });
});

describe('Redis settings that cannot work', () => {
  const redis = new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');

  it('logs why Redis refuses its credentials, never the password itself', async () => {
    const dataDir = await createTempDataDir();
    const secret = `s3cret-${randomUUID()}`;
    const service = await startService({ RULES_DATA_DIR: dataDir.path, REDIS_URL: `redis://nobody:${secret}@${redis.host}/0` });
    try {
      const deadline = Date.now() + 10_000;
      while (!service.logs.some((line) => line.includes('Redis connection error')) && Date.now() < deadline) await delay(50);
      expect(service.logs.some((line) => line.includes('Redis connection error'))).toBe(true);
      expect(service.logs.filter((line) => line.includes(secret))).toEqual([]);
    } finally {
      service.child.kill('SIGKILL');
      await service.exit;
      await dataDir.remove();
    }
  });

  it('exits 1 at start-up when REDIS_URL names a database the server refuses, saying so without a stack trace', async () => {
    const dataDir = await createTempDataDir();
    const child = spawn(process.execPath, [MAIN], {
      env: { PATH: process.env.PATH ?? '', PORT: '0', RULES_DATA_DIR: dataDir.path, REDIS_URL: `redis://${redis.host}/99` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    for (const stream of [child.stdout, child.stderr]) stream.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    const [code] = await once(child, 'exit');
    await dataDir.remove();
    expect(code).toBe(1);
    expect(output).toContain('start-up failed (opening the session store): REDIS_URL names database 99, which this Redis server refuses');
    expect(output).not.toMatch(/^\s+at /m);
  });
});

describe('a stop signal while the service is still starting', () => {
  it('lets the step in progress finish, closes what was opened and exits 0 without ever listening', async () => {
    const dataDir = await createTempDataDir();
    try {
      const child = spawn(process.execPath, [MAIN], {
        env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', RULES_LOG_LEVEL: 'info', RULES_DATA_DIR: dataDir.path },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const logs: string[] = [];
      const exit = once(child, 'exit');
      let signalled = false;
      child.stdout.on('data', (chunk: Buffer) => {
        logs.push(
          ...chunk
            .toString('utf8')
            .split('\n')
            .filter((line) => line !== ''),
        );
        // The first line (authentication is off) comes before the embedded store has opened, which takes seconds.
        if (!signalled) {
          signalled = true;
          child.kill('SIGTERM');
        }
      });
      child.stderr.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
      const [code, signal] = await exit;
      expect({ code, signal }, logs.join('\n')).toEqual({ code: 0, signal: null });
      const messages = logs.map((line) => (JSON.parse(line) as { msg: string }).msg);
      expect(messages).toContain('stop requested during start-up: stopping once the step in progress is done');
      expect(messages.at(-1)).toBe('stopped');
      expect(messages.some((message) => message.startsWith('Server listening'))).toBe(false);
      // The store was closed, not abandoned: its data directory opens again at once.
      const store = await openStore({ dataDir: dataDir.path });
      await store.close();
    } finally {
      await dataDir.remove();
    }
  });

  it('hears a signal that arrives while its modules are still loading, and exits 0', async () => {
    const child = spawn(process.execPath, ['--import', PROBE, MAIN], {
      env: {
        PATH: process.env.PATH ?? '',
        HOST: '127.0.0.1',
        PORT: '0',
        RULES_LOG_LEVEL: 'info',
        RULES_DATA_DIR: '/nonexistent/never-opened',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const logs: string[] = [];
    child.stdout.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
    const exit = once(child, 'exit');
    let signalled = false;
    child.stderr.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      if (!signalled && text.includes('probe: listening for SIGTERM')) {
        signalled = true;
        // Nothing has been logged (nor configured, nor opened) yet.
        expect(logs.join('')).toBe('');
        child.kill('SIGTERM');
      } else logs.push(text);
    });
    const [code, signal] = await exit;
    expect(signalled).toBe(true);
    expect({ code, signal }, logs.join('')).toEqual({ code: 0, signal: null });
    expect(logs.join('')).toContain('stop requested during start-up');
    expect(logs.join('')).not.toContain('start-up failed');
  });

  it('exits 0 within its timeout when asked to stop while joining a Kafka broker that never answers', { timeout: 60_000 }, async () => {
    // Accepts connections and never answers, as a broker behind a dropped route would; the first comes from the pipeline's start.
    const silent = createServer(() => undefined);
    silent.listen(0, '127.0.0.1');
    await once(silent, 'listening');
    const { port } = silent.address() as AddressInfo;
    const dataDir = await createTempDataDir();
    try {
      const child = spawn(process.execPath, [MAIN], {
        env: {
          PATH: process.env.PATH ?? '',
          HOST: '127.0.0.1',
          PORT: '0',
          RULES_DATA_DIR: dataDir.path,
          KAFKA_BROKERS: `127.0.0.1:${port}`,
          // Shorter than kafkajs's own 30 s request timeout: only leaving the join behind stops in time.
          RULES_SHUTDOWN_TIMEOUT: '20s',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const logs: string[] = [];
      const exit = once(child, 'exit');
      child.stdout.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
      child.stderr.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
      await once(silent, 'connection');
      const signalled = performance.now();
      child.kill('SIGTERM');
      const [code] = await exit;
      expect(code, logs.join('')).toBe(0);
      expect(performance.now() - signalled).toBeLessThan(20_000);
      expect(logs.join('')).toContain('the Kafka pipeline was still starting when its wait ran out; stopping without it');
      // The store was closed, not abandoned: its data directory opens again at once.
      const store = await openStore({ dataDir: dataDir.path });
      await store.close();
    } finally {
      silent.close();
      await dataDir.remove();
    }
  });

  it('exits 0 as asked when the step in progress then fails (a database that never answers)', { timeout: 60_000 }, async () => {
    // Accepts connections and never answers, as a database behind a dropped route would.
    const silent = createServer(() => undefined);
    silent.listen(0, '127.0.0.1');
    await once(silent, 'listening');
    const { port } = silent.address() as AddressInfo;
    try {
      const child = spawn(process.execPath, [MAIN], {
        env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', DATABASE_URL: `postgres://rules@127.0.0.1:${port}/rules` },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const logs: string[] = [];
      const exit = once(child, 'exit');
      child.stdout.once('data', () => child.kill('SIGTERM'));
      child.stdout.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
      child.stderr.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
      const [code] = await exit;
      expect(code, logs.join('')).toBe(0);
      expect(logs.join('')).not.toContain('start-up failed');
      expect(logs.join('')).toContain('a start-up step failed after the stop was requested; stopping');
    } finally {
      silent.close();
    }
  });
});
