// Session add-fact cost: in-process vs Redis, and whether it grows with working memory size (it should not).
// Usage: npm run bench:sessions [-- --adds 2000]   (REDIS_URL, default redis://127.0.0.1:6379)
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { MemorySessionStore } from '../src/sessions/memory-session-store.ts';
import { openRedisSessionStore } from '../src/sessions/redis-session-store.ts';
import type { AccumulatorSpec, Contribution, SessionStore } from '../src/sessions/session-store.ts';

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const addsArg = process.argv.indexOf('--adds');
const ADDS = addsArg > 0 ? Number(process.argv[addsArg + 1]) : 2000;
const PRELOADS = [0, 1000, 9000];
const T0 = Date.parse('2026-01-01T00:00:00Z');
const MINUTE = 60_000;

// A realistic ruleset: failed logins in 10 minutes, spend today (sum, avg, max), all-time count.
const SPECS: AccumulatorSpec[] = [
  { id: 'failed.10m', fn: 'count', windowMs: 10 * MINUTE },
  { id: 'spend.day', fn: 'sum', windowMs: 24 * 60 * MINUTE },
  { id: 'spend.avg', fn: 'avg' },
  { id: 'spend.max', fn: 'max', windowMs: 24 * 60 * MINUTE },
  { id: 'all.count', fn: 'count' },
];

function contributions(i: number): Contribution[] {
  const amount = (i * 37) % 500;
  return [
    ...(i % 3 === 0 ? [{ accumulatorId: 'failed.10m', value: 1 }] : []),
    { accumulatorId: 'spend.day', value: amount },
    { accumulatorId: 'spend.avg', value: amount },
    { accumulatorId: 'spend.max', value: amount },
    { accumulatorId: 'all.count', value: 1 },
  ];
}

async function addAt(store: SessionStore, id: string, i: number): Promise<void> {
  // One fact a second of event time, so windows evict steadily.
  const eventTimeMs = T0 + i * 1000;
  await store.addFact(id, {
    factId: `f-${i}`,
    fact: { type: i % 3 === 0 ? 'login_failed' : 'purchase', amount: (i * 37) % 500, timestamp: eventTimeMs },
    eventTimeMs,
    contributions: contributions(i),
    specs: SPECS,
    now: eventTimeMs,
    maxFacts: 100_000,
  });
}

interface Row {
  store: string;
  preload: number;
  addsPerSecond: number;
  p50Us: number;
  p99Us: number;
}

async function measure(name: string, store: SessionStore, preload: number): Promise<Row> {
  const id = `bench-${randomUUID()}`;
  await store.create({ id, rulesetId: 'bench', ttlSeconds: 600, now: T0 });
  for (let i = 0; i < preload; i += 1) await addAt(store, id, i);
  const latencies = new Float64Array(ADDS);
  const started = performance.now();
  for (let i = 0; i < ADDS; i += 1) {
    const t = performance.now();
    await addAt(store, id, preload + i);
    latencies[i] = (performance.now() - t) * 1000;
  }
  const elapsed = performance.now() - started;
  await store.delete(id);
  latencies.sort();
  return {
    store: name,
    preload,
    addsPerSecond: Math.round((ADDS / elapsed) * 1000),
    p50Us: Math.round(latencies[Math.floor(ADDS * 0.5)] ?? 0),
    p99Us: Math.round(latencies[Math.floor(ADDS * 0.99)] ?? 0),
  };
}

async function main(): Promise<void> {
  const prefix = `bench:${randomUUID()}:`;
  const rows: Row[] = [];
  const memory = new MemorySessionStore();
  for (const preload of PRELOADS) rows.push(await measure('in-process', memory, preload));
  const redis = await openRedisSessionStore({ url, keyPrefix: prefix });
  if (await redis.ping()) {
    for (const preload of PRELOADS) rows.push(await measure('redis', redis, preload));
  } else {
    console.error(`Redis at ${url} is not reachable; only the in-process store was measured.`);
  }
  await redis.close();
  const admin = new Redis(url, { lazyConnect: true, enableOfflineQueue: false });
  try {
    await admin.connect();
    const keys = await admin.keys(`${prefix}*`);
    if (keys.length > 0) await admin.del(...keys);
  } catch {
    // Nothing was written when Redis was away.
  } finally {
    admin.disconnect();
  }

  console.log(`\nSession addFact, ${ADDS} sequential adds after a preload, ${SPECS.length} accumulators (3 windowed)\n`);
  console.log('| store | facts already in memory | adds/s | p50 µs | p99 µs |');
  console.log('|---|---:|---:|---:|---:|');
  for (const r of rows) console.log(`| ${r.store} | ${r.preload} | ${r.addsPerSecond} | ${r.p50Us} | ${r.p99Us} |`);
}

await main();
