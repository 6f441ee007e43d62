// Session add-fact end to end: SessionEvaluator.addFact over 100 rules of one domain (20 accumulate) into sessions holding
// 10,000 facts, on Redis beside a bare EVALSHA round trip over the same connection (the floor), and on the in-process store;
// then over more sessions taking turns than the store's cache holds.
// Usage: npm run bench:sessions [-- --facts 10000 --adds 5000 --in-flight 16 --sessions 4 --replace-share 0.25 --rounds 3 --seed 1]
// (REDIS_URL, default redis://127.0.0.1:6379; keys under a unique prefix, removed at the end)
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { Redis } from 'ioredis';
import { RuleCatalog } from '../src/evaluation/rule-catalog.ts';
import { type SessionEvaluation, SessionEvaluator } from '../src/evaluation/session-evaluator.ts';
import { MemorySessionStore } from '../src/sessions/memory-session-store.ts';
import { RedisSessionStore, sessionRedisOptions } from '../src/sessions/redis-session-store.ts';
import type { SessionStore } from '../src/sessions/session-store.ts';
import type { Ruleset } from '../src/store/types.ts';
import { keepTickShape } from '../src/tick-shape.ts';
import { UsageError } from './lib/cli-options.ts';
import { machineHeader } from './lib/machine.ts';
import { mulberry32, type Random } from './lib/prng.ts';
import { type LoadResult, runLoad } from './lib/session-load.ts';
import { parseSessionBenchOptions, type SessionBenchOptions } from './lib/session-options.ts';
import { renderSessionTable, type SessionRound, type SessionRow, sessionTargetLines } from './lib/session-report.ts';
import { eventTime, FactIds, SESSION_DOMAIN, sessionEvent, sessionRules } from './lib/session-workload.ts';

const RULES = 100;
const ACCUMULATES = 20;
const RULESET_ID = 1;
const T0 = Date.parse('2026-03-02T08:00:00Z');
/** One fact per second of event time in each session, so windows evict steadily as the clock moves on. */
const FACT_INTERVAL_MS = 1_000;
const PRELOAD_IN_FLIGHT = 16;
/**
 * More sessions taking turns than the store's cache has room for, written one at a time: the worst case of a cache that
 * drops the least recently written (with several in flight, writes waiting for the same read share it and hide it).
 */
const CROWD_SESSIONS = 12;
const CROWD_ROOM = 10;
const CROWD_FACTS = 1_000;
/** Fresh stores that each read the measured session whole (its first add on an instance, or after its copy was dropped). */
const READ_SAMPLES = 5;

/** The floor: the cheapest script Redis can run, sent as EVALSHA by the same client the session store uses. */
type FloorClient = Redis & { benchFloor(): Promise<unknown> };

/** The service's session use case over one store, with the bench's event-time clock and per-session fact ids. */
class Bench {
  readonly evaluator: SessionEvaluator;
  readonly sessionIds: string[] = [];
  readonly #ids = new Map<string, FactIds>();
  readonly #random: Random;
  readonly #options: SessionBenchOptions;
  readonly #catalog: RuleCatalog;
  /** The service's wall clock as the evaluator sees it: moved forward by the bench so runs repeat. */
  nowMs = T0;
  added = 0;
  replacementsPlanned = 0;
  replaced = 0;
  fired = 0;

  constructor(catalog: RuleCatalog, sessions: SessionStore, options: SessionBenchOptions, seed: number) {
    this.#options = options;
    this.#random = mulberry32(seed);
    this.#catalog = catalog;
    this.evaluator = this.#evaluatorOver(sessions);
  }

  #evaluatorOver(sessions: SessionStore): SessionEvaluator {
    const ruleset: Ruleset = { id: RULESET_ID, name: 'bench', domain: SESSION_DOMAIN, description: null, created_at: '', updated_at: '' };
    const catalog = this.#catalog;
    return new SessionEvaluator({
      catalog,
      rulesets: { get: async (id) => (id === RULESET_ID ? ruleset : undefined) },
      sessions,
      // Executions are recorded into nothing: the benchmark is about working memory and evaluation.
      executions: { record: () => undefined },
      // Every add of a run may be a new id: the limit must not refuse one.
      maxFacts: 10_000_000,
      clock: () => this.nowMs,
    });
  }

  /** One new fact added through another store, e.g. a fresh one that must read the session's working memory first. */
  async addThrough(sessions: SessionStore, sessionId: string, factId: string): Promise<SessionEvaluation> {
    this.nowMs += FACT_INTERVAL_MS;
    const event = sessionEvent(this.#random, sessionId, eventTime(this.#random, this.nowMs));
    return this.#evaluatorOver(sessions).addFact(sessionId, factId, event);
  }

  async open(count: number): Promise<void> {
    for (let i = 0; i < count; i += 1) {
      const session = await this.evaluator.create(RULESET_ID, 3_600);
      this.sessionIds.push(session.id);
      this.#ids.set(session.id, new FactIds(mulberry32(this.#options.seed + i), this.#options.facts, this.#options.replaceShare));
    }
  }

  /** Fills every session with `facts` facts (f-0 ...), one second of event time apart, ending at the current clock. */
  async preload(): Promise<void> {
    const sessions = this.sessionIds.length;
    const start = this.nowMs;
    await runLoad(this.#options.facts * sessions, PRELOAD_IN_FLIGHT, async (index) => {
      const i = Math.floor(index / sessions);
      this.nowMs = Math.max(this.nowMs, start + i * FACT_INTERVAL_MS);
      const sessionId = this.sessionIds[index % sessions]!;
      return this.evaluator.addFact(sessionId, `f-${i}`, sessionEvent(this.#random, sessionId, eventTime(this.#random, this.nowMs)));
    });
    this.nowMs = start + this.#options.facts * FACT_INTERVAL_MS;
  }

  /** One timed add: a new fact or a replacement, stamped a little before the clock, which moves on by `stepMs`. */
  async add(sessionId: string, stepMs: number): Promise<SessionEvaluation> {
    this.nowMs += stepMs;
    const { factId, replacement } = this.#ids.get(sessionId)!.next();
    const result = await this.evaluator.addFact(
      sessionId,
      factId,
      sessionEvent(this.#random, sessionId, eventTime(this.#random, this.nowMs)),
    );
    this.added += 1;
    if (replacement) this.replacementsPlanned += 1;
    if (result.replaced) this.replaced += 1;
    this.fired += result.fired_rules.length;
    return result;
  }

  async close(): Promise<void> {
    for (const id of this.sessionIds) await this.evaluator.delete(id);
  }
}

interface Measured {
  result: LoadResult;
  /** Redis's own EVALSHA time per timed operation; undefined without a Redis to ask. */
  redisUsPerOp: number | undefined;
}

/** Redis's own total of EVALSHA time so far, µs (INFO commandstats): script time without the network. */
async function evalshaUsec(redis: Redis): Promise<number> {
  const info = await redis.info('commandstats');
  return Number(/cmdstat_evalsha:calls=\d+,usec=(\d+)/.exec(info)?.[1] ?? Number.NaN);
}

/** A warm-up (the JIT, the script cache and the connection see the same work first), then the timed run. */
async function measure(total: number, inFlight: number, operation: (index: number) => Promise<unknown>, redis?: Redis): Promise<Measured> {
  await runLoad(Math.min(1_000, total), inFlight, operation);
  const before = redis === undefined ? 0 : await evalshaUsec(redis);
  const result = await runLoad(total, inFlight, operation);
  const redisUsPerOp = redis === undefined ? undefined : ((await evalshaUsec(redis)) - before) / total;
  return { result, redisUsPerOp };
}

function adds(bench: Bench, sessionIds: readonly string[]): (index: number) => Promise<unknown> {
  const step = FACT_INTERVAL_MS / sessionIds.length;
  return (index) => bench.add(sessionIds[index % sessionIds.length]!, step);
}

/** Milliseconds of wall and client CPU for a fresh store's first add to a session: the whole read, then the add. */
async function freshReads(url: string, prefix: string, bench: Bench, sessionId: string): Promise<{ wallMs: number; cpuMs: number }[]> {
  const samples: { wallMs: number; cpuMs: number }[] = [];
  for (let i = 0; i < READ_SAMPLES; i += 1) {
    const client = new Redis(url, { ...sessionRedisOptions(2_000), lazyConnect: true });
    await client.connect();
    const store = new RedisSessionStore(client, prefix);
    try {
      const cpu = process.cpuUsage();
      const started = performance.now();
      await bench.addThrough(store, sessionId, `read-${i}`);
      const used = process.cpuUsage(cpu);
      samples.push({ wallMs: performance.now() - started, cpuMs: (used.user + used.system) / 1_000 });
    } finally {
      await store.close();
    }
  }
  return samples;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

async function cleanUp(redis: Redis, prefix: string): Promise<number> {
  let removed = 0;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1_000);
    cursor = next;
    if (keys.length > 0) removed += await redis.del(...keys);
  } while (cursor !== '0');
  return removed;
}

async function main(): Promise<void> {
  // As the service's main.ts does first (src/tick-shape.ts): the sessions run in this process.
  keepTickShape();
  const options = parseSessionBenchOptions(process.argv.slice(2));
  const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const prefix = `bench:${randomUUID()}:`;
  const rules = sessionRules(RULES, ACCUMULATES, mulberry32(options.seed));
  const catalog = await RuleCatalog.open({ rules: { snapshot: async () => ({ revision: 1, rules }) } });
  const accumulators = catalog.engine.accumulators(SESSION_DOMAIN);
  const windowed = accumulators.filter((a) => a.windowMs !== undefined).length;

  const client = new Redis(url, { ...sessionRedisOptions(2_000), lazyConnect: true });
  // The cause is reported once below instead of as ioredis's unhandled error event.
  let connectionError: Error | undefined;
  client.on('error', (error: Error) => {
    connectionError = error;
  });
  try {
    await client.connect();
  } catch (error) {
    console.error(`Redis at ${url} is not reachable (${(connectionError ?? (error as Error)).message}); start it or set REDIS_URL.`);
    process.exitCode = 1;
    client.disconnect();
    return;
  }
  client.defineCommand('benchFloor', { numberOfKeys: 0, lua: 'return 1' });
  const floorClient = client as FloorClient;
  // The store takes the same client, so the floor and the adds share one loopback connection.
  const redisStore = new RedisSessionStore(client, prefix);
  const redisVersion = /redis_version:(\S+)/.exec(await client.info('server'))?.[1] ?? 'unknown';
  const admin = new Redis(url, { lazyConnect: true });
  await admin.connect();
  const crowdClient = new Redis(url, { ...sessionRedisOptions(2_000), lazyConnect: true });
  await crowdClient.connect();
  const crowdStore = new RedisSessionStore(crowdClient, prefix, { cacheFacts: CROWD_ROOM * (CROWD_FACTS + 1) });
  // Whole-session reads (read-session.lua, defined by the store), counted to show how often the cache missed.
  let crowdReads = 0;
  const crowdCommands = crowdClient as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  const readSession = crowdCommands.sessionRead!.bind(crowdClient);
  crowdCommands.sessionRead = (...args: unknown[]) => {
    crowdReads += 1;
    return readSession(...args);
  };

  const rows: SessionRow[] = [];
  const redisBench = new Bench(catalog, redisStore, options, options.seed + 1_000);
  const memoryBench = new Bench(catalog, new MemorySessionStore(), options, options.seed + 2_000);
  const crowdBench = new Bench(catalog, crowdStore, { ...options, facts: CROWD_FACTS }, options.seed + 3_000);
  const notes: string[] = [];
  try {
    const loadStarted = performance.now();
    await redisBench.open(options.sessions);
    await redisBench.preload();
    await memoryBench.open(1);
    await memoryBench.preload();
    const preloadS = (performance.now() - loadStarted) / 1_000;
    const single = [redisBench.sessionIds[0]!];
    const reads = await freshReads(url, prefix, redisBench, single[0]!);
    notes.push(
      `Whole-session read: a fresh store's first add to a session of ${options.facts.toLocaleString('en-US')} facts (the read into a new copy, then the add) ` +
        `took a median ${median(reads.map((r) => r.wallMs)).toFixed(1)} ms, ${median(reads.map((r) => r.cpuMs)).toFixed(1)} ms of client CPU (${READ_SAMPLES} fresh stores)`,
    );

    const floor = (): Promise<unknown> => floorClient.benchFloor();
    const floorSequential = await measure(options.adds, 1, floor, admin);
    const sequential = await measure(options.adds, 1, adds(redisBench, single), admin);
    // Floor and adds back to back in every round: the machine's speed drifts, and a ratio is fair only within a round.
    const rounds: { floor: Measured; oneSession: Measured; spread: Measured }[] = [];
    for (let round = 0; round < options.rounds; round += 1) {
      const floorConcurrent = await measure(options.adds * 4, options.inFlight, floor, admin);
      const oneSession = await measure(options.adds, options.inFlight, adds(redisBench, single), admin);
      const spread = await measure(options.adds, options.inFlight, adds(redisBench, redisBench.sessionIds), admin);
      rounds.push({ floor: floorConcurrent, oneSession, spread });
    }
    const factCount = (await redisBench.add(single[0]!, FACT_INTERVAL_MS)).fact_count;
    notes.push(
      `Replacements: ${redisBench.replaced} of ${redisBench.added} timed and warm-up adds replaced a fact (${redisBench.replacementsPlanned} planned); ` +
        `${(redisBench.fired / redisBench.added).toFixed(1)} rules fired per add on average`,
      `Working memory of the busiest session after the run: ${factCount.toLocaleString('en-US')} facts (preloaded with ${options.facts.toLocaleString('en-US')})`,
    );

    const memory = await measure(options.adds, 1, adds(memoryBench, [memoryBench.sessionIds[0]!]));

    await crowdBench.open(CROWD_SESSIONS);
    await crowdBench.preload();
    const readsBefore = crowdReads;
    const crowd = await measure(options.adds, 1, adds(crowdBench, crowdBench.sessionIds), admin);
    notes.push(
      `Crowded cache: ${(crowdReads - readsBefore).toLocaleString('en-US')} whole-session reads in ${(Math.min(1_000, options.adds) + options.adds).toLocaleString('en-US')} warm-up and timed adds ` +
        `(${CROWD_SESSIONS} sessions written in turn, the store's cache with room for ${CROWD_ROOM}: RULES_SESSION_CACHE_FACTS ${(CROWD_ROOM * (CROWD_FACTS + 1)).toLocaleString('en-US')})`,
    );

    const load = `${options.inFlight} in flight`;
    const sessions = `${options.sessions} session${options.sessions === 1 ? '' : 's'}`;
    const row = (label: string, rowLoad: string, measured: Measured, against: Measured | undefined): SessionRow => ({
      label,
      load: rowLoad,
      result: measured.result,
      floor: against?.result,
      redisUsPerOp: measured.redisUsPerOp,
    });
    rows.push(
      row('floor: EVALSHA `return 1`', '1 in flight', floorSequential, undefined),
      row('add-fact, Redis', '1 in flight', sequential, floorSequential),
      row('add-fact, in-process', '1 in flight', memory, floorSequential),
    );
    rounds.forEach((round, index) => {
      const label = rounds.length === 1 ? '' : `round ${index + 1}, `;
      rows.push(
        row(`${label}floor: EVALSHA \`return 1\``, load, round.floor, undefined),
        row(`${label}add-fact, Redis`, `${load} on one session`, round.oneSession, round.floor),
        row(`${label}add-fact, Redis`, `${load} over ${sessions}`, round.spread, round.floor),
      );
    });
    rows.push(
      row(
        'add-fact, Redis, crowded cache',
        `1 in flight over ${CROWD_SESSIONS} sessions of ${CROWD_FACTS.toLocaleString('en-US')} facts in turn, cache room for ${CROWD_ROOM}`,
        crowd,
        floorSequential,
      ),
    );

    const [one, five, fifteen] = os.loadavg().map((value) => value.toFixed(2));
    console.log('\n## Sessions: add-fact end to end\n');
    console.log(
      machineHeader([
        `Load average: ${one}, ${five}, ${fifteen} (1, 5, 15 min); Redis ${redisVersion} at ${url.replace(/\/\/[^@]*@/, '//')} on the same machine`,
        `Workload: ${RULES} rules of one domain, ${ACCUMULATES} with accumulate (${accumulators.length} accumulators, ${windowed} windowed); ` +
          `each session preloaded with ${options.facts.toLocaleString('en-US')} facts (${preloadS.toFixed(1)} s for all); ` +
          `${options.adds.toLocaleString('en-US')} timed adds per row after a warm-up, ${Math.round(options.replaceShare * 100)}% replacing a recent fact id; ` +
          'event times a second apart, ISO 8601, 2% late by up to 10 minutes',
        'ops/s: calls completed per wall-clock second; p50/p99: per-call latency (under concurrency it includes queueing behind the others); ' +
          '× floor time: floor ops/s ÷ row ops/s, against the floor with as many in flight, of the same round (the floor is 4× as many calls); ' +
          'client CPU: this process per op; Redis: its own EVALSHA time per op (INFO commandstats: one script call per add, or per several adds of one session sent together; any other client of the server counts too)',
      ]),
    );
    console.log(`\n${renderSessionTable(rows)}\n`);
    for (const note of notes) console.log(`- ${note}`);
    console.log('');
    const results: SessionRound[] = rounds.map((round) => ({
      floor: round.floor.result,
      oneSession: round.oneSession.result,
      spread: round.spread.result,
    }));
    for (const line of sessionTargetLines({ sequential: sequential.result, rounds: results, sessions: options.sessions })) {
      console.log(line);
    }
  } finally {
    await redisBench.close().catch(() => undefined);
    await memoryBench.close().catch(() => undefined);
    await crowdBench.close().catch(() => undefined);
    const left = await cleanUp(admin, prefix);
    if (left > 0) console.error(`Removed ${left} keys left under ${prefix}`);
    await redisStore.close();
    await crowdStore.close();
    admin.disconnect();
  }
}

try {
  await main();
} catch (error) {
  if (!(error instanceof UsageError)) throw error;
  console.error(error.message);
  process.exitCode = 2;
}
