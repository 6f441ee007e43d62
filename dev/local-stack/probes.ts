// Readiness probes: each answers true only when the service does real work (metadata, HTTP 200, PONG, a query).
import { connect } from 'node:net';
import { Kafka, logLevel } from 'kafkajs';
import pg from 'pg';

/** True when a TCP connection to host:port succeeds within `timeoutMs`. */
export function tcpOpen(host: string, port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const finish = (open: boolean) => {
      socket.destroy();
      resolve(open);
    };
    socket.setTimeout(timeoutMs, () => finish(false));
    socket.once('connect', () => finish(true));
    socket.once('error', () => finish(false));
  });
}

/** The broker answers a metadata request (kafkajs admin describeCluster) with at least one broker. */
export async function kafkaAnswers(brokers: readonly string[]): Promise<boolean> {
  const kafka = new Kafka({
    clientId: 'local-stack-probe',
    brokers: [...brokers],
    logLevel: logLevel.NOTHING,
    connectionTimeout: 1_000,
    requestTimeout: 3_000,
    retry: { retries: 0 },
  });
  const admin = kafka.admin();
  try {
    await admin.connect();
    const cluster = await admin.describeCluster();
    return cluster.brokers.length > 0;
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/**
 * Creates the broker's internal topics up front (__consumer_offsets through a coordinator lookup, __transaction_state
 * through a transactional producer's InitProducerId), so the first consumer group and the first exactly-once
 * transaction of a test do not wait for them; on a fresh broker this overlaps with the registry's slower start.
 */
export async function warmUpKafka(brokers: readonly string[]): Promise<void> {
  const kafka = new Kafka({
    clientId: 'local-stack-warm-up',
    brokers: [...brokers],
    logLevel: logLevel.NOTHING,
    retry: { retries: 50, initialRetryTime: 50, maxRetryTime: 250 },
  });
  const admin = kafka.admin();
  const producer = kafka.producer({ transactionalId: `local-stack-warm-up-${process.pid}`, idempotent: true, maxInFlightRequests: 1 });
  try {
    await admin.connect();
    await admin.describeGroups(['local-stack-warm-up']);
    await producer.connect();
    const transaction = await producer.transaction();
    await transaction.abort();
  } finally {
    await producer.disconnect().catch(() => undefined);
    await admin.disconnect().catch(() => undefined);
  }
}

/** The Confluent-compatible registry API lists its subjects. */
export async function registryAnswers(schemaRegistryUrl: string): Promise<boolean> {
  const response = await fetch(`${schemaRegistryUrl.replace(/\/+$/, '')}/subjects`, { signal: AbortSignal.timeout(3_000) });
  await response.body?.cancel();
  if (!response.ok) throw new Error(`GET ${schemaRegistryUrl}/subjects answered HTTP ${response.status}`);
  return true;
}

/** Redis answers PING with PONG (RESP over a raw socket: no client library, no reconnect loop). */
export function redisAnswers(redisUrl: string, timeoutMs = 1_000): Promise<boolean> {
  const url = new URL(redisUrl);
  const host = url.hostname || '127.0.0.1';
  const port = Number(url.port || 6379);
  const password = decodeURIComponent(url.password);
  const username = decodeURIComponent(url.username);
  const commands: string[][] = [];
  if (password !== '') commands.push(username !== '' ? ['AUTH', username, password] : ['AUTH', password]);
  commands.push(['PING']);
  const payload = commands
    .map((args) => `*${args.length}\r\n${args.map((arg) => `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`).join('')}`)
    .join('');
  return new Promise((resolve, reject) => {
    if (url.protocol === 'rediss:') {
      reject(new Error('rediss:// URLs are not probed; the stack trusts them as given'));
      return;
    }
    const socket = connect({ host, port });
    let received = '';
    socket.setTimeout(timeoutMs, () => {
      socket.destroy();
      reject(new Error(`no answer from ${host}:${port} within ${timeoutMs} ms`));
    });
    socket.once('connect', () => socket.write(payload));
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('utf8');
      if (received.startsWith('-')) {
        socket.destroy();
        reject(new Error(`redis answered ${received.trim()}`));
      } else if (received.includes('+PONG')) {
        socket.destroy();
        resolve(true);
      }
    });
    socket.once('error', (error) => reject(error));
  });
}

/** PostgreSQL runs `select 1` for the URL's user and database. */
export async function postgresAnswers(databaseUrl: string, timeoutMs = 2_000): Promise<boolean> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: timeoutMs });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const result = await client.query<{ one: number }>('select 1 as one');
    return result.rows[0]?.one === 1;
  } finally {
    await client.end().catch(() => undefined);
  }
}
