// The local stack's services do real work: a message through the broker, a committed transaction, an Avro round trip
// through the registry's Confluent-compatible API, Redis commands, and a PostgreSQL query when a server exists.

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import type { Consumer, EachMessagePayload, Producer } from 'kafkajs';
import pg from 'pg';
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { startLocalStack } from '../../dev/local-stack/index.ts';
import { startSupervised } from '../../dev/local-stack/supervised-process.ts';
import { waitUntil } from '../../dev/local-stack/wait-until.ts';
import { stackEndpoints, useStackResources } from '../helpers/stack.ts';

const resources = useStackResources();
const clients: { disconnect(): Promise<void> }[] = [];

afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.disconnect()));
});

function track<T extends Producer | Consumer>(client: T): T {
  clients.push(client);
  return client;
}

/** Reads `count` messages of a topic from the beginning with a fresh group; read_committed unless told otherwise. */
async function readMessages(topic: string, count: number, readUncommitted = false): Promise<EachMessagePayload['message'][]> {
  const consumer = track(resources.kafka().consumer({ groupId: resources.groupId(), readUncommitted }));
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const messages: EachMessagePayload['message'][] = [];
  await new Promise<void>((resolve, reject) => {
    consumer
      .run({
        eachMessage: async ({ message }) => {
          messages.push(message);
          if (messages.length >= count) resolve();
        },
      })
      .catch(reject);
  });
  return messages;
}

describe('the local stack', () => {
  it('reports where every service came from', () => {
    const { sources } = stackEndpoints();
    expect(Object.keys(sources).sort()).toEqual(['kafka', 'postgres', 'redis', 'registry']);
    for (const source of Object.values(sources)) expect(['env', 'testcontainers', 'process', 'existing', 'unavailable']).toContain(source);
  });

  it('carries a message from a producer to a consumer through the broker', async () => {
    const topic = await resources.topic({ prefix: 'roundtrip' });
    const producer = track(resources.kafka().producer());
    await producer.connect();
    await producer.send({
      topic,
      messages: [{ key: 'fact-1', value: JSON.stringify({ facts: { amount: 150 } }), headers: { origin: 'test' } }],
    });

    const [message] = await readMessages(topic, 1);
    expect(message?.key?.toString()).toBe('fact-1');
    expect(JSON.parse(message?.value?.toString() ?? 'null')).toEqual({ facts: { amount: 150 } });
    expect(message?.headers?.origin?.toString()).toBe('test');
  });

  it('commits a transaction, and a read_committed consumer sees only committed records', async () => {
    const topic = await resources.topic({ prefix: 'transactions' });
    // Two transactional ids: back-to-back transactions on one id make the broker answer CONCURRENT_TRANSACTIONS first.
    const transactional = async () => {
      const producer = track(
        resources.kafka().producer({ transactionalId: resources.transactionalId(), idempotent: true, maxInFlightRequests: 1 }),
      );
      await producer.connect();
      return producer;
    };
    const aborting = await (await transactional()).transaction();
    await aborting.send({ topic, messages: [{ key: 'a', value: 'aborted' }] });
    await aborting.abort();
    const committing = await (await transactional()).transaction();
    await committing.send({ topic, messages: [{ key: 'c', value: 'committed' }] });
    await committing.commit();

    const [message] = await readMessages(topic, 1);
    expect(message?.value?.toString()).toBe('committed');
    // The aborted record still occupies an offset: a read_uncommitted reader sees both.
    const raw = await readMessages(topic, 2, true);
    expect(raw.map((entry) => entry.value?.toString())).toEqual(['aborted', 'committed']);
  });

  it('registers an Avro schema through the Confluent-compatible API and round-trips a record', async () => {
    const registry = new SchemaRegistry({ host: resources.schemaRegistryUrl });
    const subject = `${resources.transactionalId('subject')}-value`;
    const schema = JSON.stringify({
      type: 'record',
      name: 'Fact',
      namespace: 'rules.test',
      fields: [
        { name: 'amount', type: 'int' },
        { name: 'country', type: 'string' },
      ],
    });
    const { id } = await registry.register({ type: SchemaType.AVRO, schema }, { subject });
    expect(id).toBeGreaterThan(0);
    expect(await registry.getLatestSchemaId(subject)).toBe(id);

    const encoded = await registry.encode(id, { amount: 150, country: 'DE' });
    // Confluent wire format: magic byte 0, then the schema id as a big-endian int32.
    expect(encoded[0]).toBe(0);
    expect(encoded.readInt32BE(1)).toBe(id);
    expect(await registry.decode(encoded)).toEqual({ amount: 150, country: 'DE' });
  });

  it('answers PING and keeps values under a unique key prefix', async () => {
    const redis = resources.redis();
    const prefix = resources.keyPrefix();
    expect(await redis.ping()).toBe('PONG');
    await redis.set(`${prefix}greeting`, 'hello');
    expect(await redis.get(`${prefix}greeting`)).toBe('hello');
    expect(await redis.get(`${resources.keyPrefix()}greeting`)).toBeNull();
  });

  it('runs a PostgreSQL query when a server is available, and says "unavailable" otherwise', async () => {
    const { databaseUrl, sources } = stackEndpoints();
    if (databaseUrl === undefined) {
      expect(sources.postgres).toBe('unavailable');
      return;
    }
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      const result = await client.query<{ one: number }>('select 1 as one');
      expect(result.rows).toEqual([{ one: 1 }]);
    } finally {
      await client.end();
    }
  });
});

describe('startLocalStack with bad input', () => {
  it('rejects an unknown service name, listing the known ones', async () => {
    await expect(startLocalStack({ services: ['kafka', 'zookeeper' as 'kafka'], log: () => undefined })).rejects.toThrow(
      'services names unknown service(s) "zookeeper"; known: kafka, registry, redis, postgres',
    );
  });

  it('rejects a malformed KAFKA_BROKERS before starting anything', async () => {
    await expect(startLocalStack({ services: ['kafka'], env: { KAFKA_BROKERS: 'localhost' }, log: () => undefined })).rejects.toThrow(
      'KAFKA_BROKERS must be host:port[,host:port...]; "localhost" is not',
    );
  });

  it('names the variable when an endpoint from the environment does not answer', async () => {
    const { port } = await closedPort();
    await expect(
      startLocalStack({ services: ['redis'], env: { REDIS_URL: `redis://127.0.0.1:${port}` }, log: () => undefined, readyTimeoutMs: 500 }),
    ).rejects.toThrow(`redis: REDIS_URL=redis://127.0.0.1:${port} did not answer within 500 ms`);
  });
});

/** A port nothing listens on: bound once to learn a free number, then released. */
async function closedPort(): Promise<{ port: number }> {
  const { createServer } = await import('node:net');
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (typeof address !== 'object' || address === null) throw new Error('no port');
  return { port: address.port };
}

describe('processes the local stack starts', () => {
  const supervisedModule = new URL('../../dev/local-stack/supervised-process.ts', import.meta.url).href;

  async function scratchDir(): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'supervised-'));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    return dir;
  }

  function groupAlive(pgid: number): boolean {
    try {
      process.kill(-pgid, 0);
      return true;
    } catch {
      return false;
    }
  }

  /** Writes a Node script that starts `sleep 600` supervised as `child`, runs `then`, and prints the group id. */
  async function parentScript(then: readonly string[]): Promise<string> {
    const dir = await scratchDir();
    const script = join(dir, 'parent.ts');
    await writeFile(
      script,
      [
        `import { startSupervised } from ${JSON.stringify(supervisedModule)};`,
        `const child = startSupervised('sleep', ['600'], { cwd: ${JSON.stringify(dir)}, logFile: ${JSON.stringify(join(dir, 'out.log'))} });`,
        ...then,
        "process.stdout.write(String(child.pid) + '\\n');",
      ].join('\n'),
    );
    return script;
  }

  /** Runs a parent script that prints the group id, then ends the way `ending` says. */
  async function orphanedGroup(ending: 'SIGKILL' | 'exit' | 'SIGINT'): Promise<number> {
    const script = await parentScript([
      ending === 'exit' ? 'setTimeout(() => process.exit(0), 200);' : 'setInterval(() => undefined, 1000);',
    ]);
    const parent = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const pgid = await new Promise<number>((resolve, reject) => {
      parent.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
      parent.once('exit', (code) => reject(new Error(`parent exited early with ${code}`)));
    });
    expect(groupRunning(pgid)).toBe(true);
    if (ending !== 'exit') parent.kill(ending);
    await new Promise((resolve) => parent.once('exit', resolve));
    return pgid;
  }

  /**
   * Whether a process of the group still runs. On Linux zombies are left out: a member whose parent died first is reaped
   * by init, which some inits do only seconds later. Elsewhere any member counts, zombies too.
   */
  function groupRunning(pgid: number): boolean {
    if (process.platform !== 'linux') return groupAlive(pgid);
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      let stat: string;
      try {
        stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      } catch {
        continue;
      }
      // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so fields are read after the last ')'.
      const [state, , group] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(group) === pgid && state !== 'Z') return true;
    }
    return false;
  }

  /** A group takes a moment to die after its signal, so the test waits for it to stop running instead of looking once. */
  async function groupGone(pgid: number): Promise<boolean> {
    const gone = await waitUntil(async () => !groupRunning(pgid), { timeoutMs: 15_000, intervalMs: 50 });
    if (!gone.ok) process.kill(-pgid, 'SIGKILL');
    return gone.ok;
  }

  /** Starts a shell loop under supervision and waits until its TERM trap is in place. */
  async function supervisedLoop(trap: string) {
    const dir = await scratchDir();
    const logFile = join(dir, 'out.log');
    const child = startSupervised('sh', ['-c', `trap '${trap}' TERM; echo ready; while :; do sleep 0.1; done`], { cwd: dir, logFile });
    const ready = await waitUntil(async () => (await readFile(logFile, 'utf8')).includes('ready'), { timeoutMs: 10_000, intervalMs: 20 });
    expect(ready.ok).toBe(true);
    return child;
  }

  it('stops a command with SIGTERM and reports its exit status', async () => {
    const child = await supervisedLoop('exit 7');
    expect(child.hasExited()).toBe(false);
    expect(await child.stop()).toBe(7);
    expect(child.hasExited()).toBe(true);
    expect(await groupGone(child.pid)).toBe(true);
  });

  it('kills a command that ignores SIGTERM once the grace period is over', async () => {
    const child = await supervisedLoop('');
    expect(await child.stop(300)).toBeNull();
    expect(await groupGone(child.pid)).toBe(true);
  });

  it.each(['SIGKILL', 'exit', 'SIGINT'] as const)('leaves no process behind when its parent ends by %s', async (ending) => {
    expect(await groupGone(await orphanedGroup(ending))).toBe(true);
  });

  it('leaves the stopping to a parent that handles SIGINT itself (npm run dev stops the service before the stack)', async () => {
    const script = await parentScript([
      'process.on("SIGINT", async () => {',
      // Time enough for a premature SIGTERM to the group to have ended it.
      '  await new Promise((resolve) => setTimeout(resolve, 500));',
      "  process.stdout.write(child.hasExited() ? 'stopped early\\n' : 'still running\\n');",
      '  await child.stop();',
      '  process.exit(0);',
      '});',
      'setInterval(() => undefined, 1000);',
    ]);
    const parent = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let output = '';
    parent.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const started = await waitUntil(async () => output.includes('\n'), { timeoutMs: 10_000, intervalMs: 20 });
    expect(started.ok).toBe(true);
    const pgid = Number(output.trim());
    parent.kill('SIGINT');
    const [code] = await once(parent, 'exit');
    expect(code).toBe(0);
    expect(output).toContain('still running');
    expect(await groupGone(pgid)).toBe(true);
  });
});
