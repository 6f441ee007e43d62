// HTTP benchmark: POST /api/v1/evaluate with 1,000 stored rules beside a bare Fastify route, each served by a child process,
// autocannon driving them from this one. A third server, the same app with executions kept in memory, shows what the
// database writes cost. Run: npm run bench:http [-- --duration 10 --rounds 3 --connections 32 --pg --cpu-profile DIR --rate N].
// --rate N holds every route at N requests/s instead of as many as it can serve, to compare CPU per request at equal load.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import Fastify from 'fastify';
import pg from 'pg';
import { loadConfig } from '../src/config.ts';
import type { ConditionNode } from '../src/contracts/condition-dsl.ts';
import { RuleCatalog } from '../src/evaluation/rule-catalog.ts';
import { buildApp } from '../src/http/app.ts';
import { createLogger } from '../src/logger.ts';
import { asExecutionRecord, countStoredExecutions } from '../src/store/execution-batches.ts';
import { openStore } from '../src/store/index.ts';
import type { ExecutionRecord, RuleDraft, SerializedExecution, Store, StoredRule } from '../src/store/types.ts';
import { keepTickShape } from '../src/tick-shape.ts';
import { mulberry32 } from './lib/prng.ts';

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const SELF = fileURLToPath(import.meta.url);

const FACT = {
  facts: {
    amount: 4_200,
    currency: 'EUR',
    country: 'DE',
    tier: 'gold',
    channel: 'web',
    items: 3,
    customer: { age: 41, segment: 'retail' },
  },
  domain: 'payments',
};

/** Child mode: the bare route, reading the same JSON body and answering a constant. */
async function serveBare(): Promise<void> {
  const app = Fastify({ logger: false });
  app.post('/bare', async () => ({ ok: true }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address !== null ? address.port : 0}\n`);
}

/**
 * Child mode, diagnostic: the service's own HTTP app and engine over the same rules, but executions are only kept in memory
 * (the most recent 1,000, so retaining them costs no garbage collection), so the gap to the real service is what writing them to the database costs.
 */
async function serveInMemory(ruleCount: number): Promise<void> {
  // As the service's main.ts does first (src/tick-shape.ts).
  keepTickShape();
  const at = new Date().toISOString();
  const stored: StoredRule[] = rules(ruleCount).map((draft, index) => ({
    id: index + 1,
    name: draft.name,
    domain: draft.domain ?? 'default',
    condition_dsl: draft.condition_dsl,
    action: draft.action,
    priority: draft.priority ?? 0,
    enabled: true,
    version: 1,
    created_at: at,
    updated_at: at,
  }));
  // A ring of the latest 1,000: deleting a Map's oldest key per request cost this diagnostic 2-3 µs a request.
  const recent: (ExecutionRecord | SerializedExecution | undefined)[] = new Array(1_000);
  let next = 0;
  const unused = async (): Promise<never> => {
    throw new Error('not part of the benchmark');
  };
  const store: Store = {
    rules: {
      all: async () => stored,
      snapshot: async () => ({ revision: 1, rules: stored }),
      revision: async () => 1,
      create: unused,
      get: unused,
      list: unused,
      replace: unused,
      update: unused,
      delete: unused,
      versions: unused,
    },
    rulesets: { create: unused, get: unused, list: unused },
    audit: { list: unused, verify: unused },
    executions: {
      record(execution) {
        recent[next] = execution;
        next = (next + 1) % recent.length;
      },
      get: async (id) => {
        const found = recent.find((execution) => execution?.execution_id === id);
        return found === undefined ? undefined : asExecutionRecord(found);
      },
      flush: async () => undefined,
      pendingCount: () => 0,
      pendingBytes: () => 0,
      reservedBytes: () => 0,
      deleteOlderThan: async () => 0,
      close: async () => undefined,
    },
    ping: async () => true,
    close: async () => undefined,
  };
  const catalog = await RuleCatalog.open({ rules: store.rules });
  const app = await buildApp({ config: loadConfig({}).http, version: 'bench', store, catalog, logger: createLogger('warn') });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address !== null ? address.port : 0}\n`);
}

/**
 * Rules shaped like a payments rulebook: each names a country and adds one to three of a threshold, a tier, an age band and
 * a channel (every 50th a regex), so a typical fact fires a handful of rules, as in production rule sets.
 */
function rules(count: number): RuleDraft[] {
  const next = mulberry32(42);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  const countries = ['DE', 'FR', 'US', 'GB', 'NL', 'ES', 'IT', 'PL', 'SE', 'CA'];
  const domains = ['payments', 'payments', 'shipping', 'loyalty'];
  return Array.from({ length: count }, (_, index) => {
    const country: ConditionNode = { type: 'condition', field: 'country', op: '==', value: pick(countries) };
    const others: ConditionNode[] = [
      { type: 'condition', field: 'amount', op: '>', value: Math.round(next() * 10_000) },
      { type: 'condition', field: 'tier', op: 'in', value: [pick(['gold', 'silver', 'bronze', 'platinum']), pick(['silver', 'bronze'])] },
      { type: 'condition', field: 'customer.age', op: 'between', value: [18 + Math.floor(next() * 20), 40 + Math.floor(next() * 40)] },
      index % 50 === 0
        ? { type: 'condition', field: 'channel', op: 'regex', value: '^(web|app)$' }
        : { type: 'condition', field: 'channel', op: '==', value: pick(['web', 'app', 'pos']) },
    ];
    const children = [country, ...others.sort(() => next() - 0.5).slice(0, 1 + Math.floor(next() * 3))];
    return {
      name: `rule-${index}`,
      domain: pick(domains),
      condition_dsl: { type: 'and', children },
      action: `action-${index % 40}`,
      priority: Math.floor(next() * 10),
    };
  });
}

interface Server {
  child: ChildProcess;
  port: number;
}

/** Where --cpu-profile asks the servers to write their CPU profiles (one file per server, written when it stops). */
let profileDir: string | undefined;
/** Requests/s every route is held at (autocannon overallRate); undefined: as fast as each serves. */
let fixedRate: number | undefined;

async function spawnServer(args: string[], env: Record<string, string>, ready: RegExp): Promise<Server> {
  const profiling = profileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${profileDir}`];
  const child = spawn(process.execPath, [...profiling, ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let buffer = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      const match = ready.exec(buffer);
      if (match !== null) resolve(Number(match[1]));
    });
    child.once('exit', (code) => reject(new Error(`server exited with ${code} before listening`)));
  });
  return { child, port };
}

async function stop(server: Server): Promise<number | null> {
  server.child.kill('SIGTERM');
  const [code] = await once(server.child, 'exit');
  return code as number | null;
}

interface Figures {
  requests: number;
  p50: number;
  p99: number;
  ok: number;
  failed: number;
  /** Server process CPU time per answered request, in microseconds (Linux only). */
  cpuUs: number | undefined;
  /** The server's main thread (its event loop) alone, per answered request: the rest is its other threads. */
  eventLoopUs: number | undefined;
}

/**
 * User + system CPU time of a process (or, with `mainThread`, of its main thread) in milliseconds, from /proc (clock
 * ticks of 10 ms); undefined off Linux.
 */
async function cpuMs(pid: number | undefined, mainThread = false): Promise<number | undefined> {
  if (pid === undefined) return undefined;
  try {
    const stat = await readFile(mainThread ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

async function load(server: Server, url: string, connections: number, duration: number): Promise<Figures> {
  const cpuBefore = await cpuMs(server.child.pid);
  const eventLoopBefore = await cpuMs(server.child.pid, true);
  const result = await autocannon({
    url,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(FACT),
    connections,
    duration,
    ...(fixedRate === undefined ? {} : { overallRate: fixedRate }),
  });
  const cpuAfter = await cpuMs(server.child.pid);
  const eventLoopAfter = await cpuMs(server.child.pid, true);
  const answered = result['2xx'] + result.non2xx;
  const perRequest = (before: number | undefined, after: number | undefined): number | undefined =>
    before === undefined || after === undefined || answered === 0 ? undefined : ((after - before) * 1_000) / answered;
  return {
    requests: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    ok: result['2xx'],
    failed: result.errors + result.non2xx,
    cpuUs: perRequest(cpuBefore, cpuAfter),
    eventLoopUs: perRequest(eventLoopBefore, eventLoopAfter),
  };
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};

async function countExecutions(dataDir: string, databaseUrl: string | undefined): Promise<number> {
  const store = await openStore({ dataDir, ...(databaseUrl === undefined ? {} : { databaseUrl }) });
  try {
    return await countStoredExecutions(store.db);
  } finally {
    await store.close();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: '10' },
      warmup: { type: 'string', default: '5' },
      rounds: { type: 'string', default: '3' },
      connections: { type: 'string', default: '32' },
      rate: { type: 'string' },
      rules: { type: 'string', default: '1000' },
      pg: { type: 'boolean', default: false },
      'cpu-profile': { type: 'string' },
    },
  });
  const duration = Number(values.duration);
  const warmup = Number(values.warmup);
  const rounds = Number(values.rounds);
  const connections = Number(values.connections);
  const ruleCount = Number(values.rules);
  profileDir = values['cpu-profile'];
  fixedRate = values.rate === undefined ? undefined : Number(values.rate);
  if (fixedRate !== undefined && !(Number.isInteger(fixedRate) && fixedRate > 0)) throw new Error('--rate must be a positive integer');

  // Storage: PGlite in a temporary directory, or a throwaway database on the local PostgreSQL (--pg).
  const dataDir = await mkdtemp(join(tmpdir(), 'rules-bench-'));
  const adminUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const database = `rules_bench_${process.pid}`;
  let databaseUrl: string | undefined;
  if (values.pg) {
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`create database ${database}`);
    await admin.end();
    const url = new URL(adminUrl);
    url.pathname = `/${database}`;
    databaseUrl = url.toString();
  }
  const storage = values.pg ? 'PostgreSQL' : 'PGlite';

  try {
    const seeding = performance.now();
    const store = await openStore({ dataDir, ...(databaseUrl === undefined ? {} : { databaseUrl }) });
    for (const draft of rules(ruleCount)) await store.rules.create(draft, 'bench');
    await store.close();
    console.log(`seeded ${ruleCount} rules in ${((performance.now() - seeding) / 1_000).toFixed(1)} s (${storage})`);

    const service = await spawnServer(
      [MAIN],
      {
        HOST: '127.0.0.1',
        PORT: '0',
        RULES_DATA_DIR: dataDir,
        // Info logs a few lines at start-up (the listening line gives the port) and none per request.
        RULES_LOG_LEVEL: 'info',
        // Long enough to write every execution still pending when the load stops.
        RULES_SHUTDOWN_TIMEOUT: '10m',
        ...(databaseUrl === undefined ? {} : { DATABASE_URL: databaseUrl }),
      },
      /Server listening at http:\/\/127\.0\.0\.1:(\d+)/,
    );
    const bare = await spawnServer([SELF, '--serve-bare'], {}, /listening (\d+)/);
    const inMemory = await spawnServer([SELF, '--serve-in-memory', String(ruleCount)], {}, /listening (\d+)/);

    const evaluateUrl = `http://127.0.0.1:${service.port}/api/v1/evaluate`;
    const bareUrl = `http://127.0.0.1:${bare.port}/bare`;
    const inMemoryUrl = `http://127.0.0.1:${inMemory.port}/api/v1/evaluate`;
    const probe = await fetch(evaluateUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(FACT) });
    const sample = (await probe.json()) as { fired_rules: number[] };
    console.log(`the benchmark fact fires ${sample.fired_rules.length} of ${ruleCount} rules`);
    console.log(`${connections} connections; warm-up ${warmup} s per route, then ${rounds} rounds of ${duration} s per route`);

    let evaluated = 1 + (await load(service, evaluateUrl, connections, warmup)).ok;
    await load(bare, bareUrl, connections, warmup);
    await load(inMemory, inMemoryUrl, connections, warmup);
    const bareRuns: Figures[] = [];
    const evaluateRuns: Figures[] = [];
    const inMemoryRuns: Figures[] = [];
    for (let round = 0; round < rounds; round++) {
      bareRuns.push(await load(bare, bareUrl, connections, duration));
      const run = await load(service, evaluateUrl, connections, duration);
      evaluated += run.ok;
      evaluateRuns.push(run);
      inMemoryRuns.push(await load(inMemory, inMemoryUrl, connections, duration));
    }

    const row = (name: string, f: Figures) =>
      `| ${name} | ${Math.round(f.requests).toLocaleString('en-US')} | ${f.p50} | ${f.p99} | ${f.cpuUs === undefined ? 'n/a' : Math.round(f.cpuUs)} | ${f.eventLoopUs === undefined ? 'n/a' : Math.round(f.eventLoopUs)} | ${f.failed} |`;
    console.log('');
    console.log('| Round, route | Requests/s | p50 ms | p99 ms | Server CPU µs/request | Event loop µs/request | Failed |');
    console.log('|---|---|---|---|---|---|---|');
    for (let round = 0; round < rounds; round++) {
      console.log(row(`${round + 1}, bare Fastify POST (constant body)`, bareRuns[round]!));
      console.log(row(`${round + 1}, POST /api/v1/evaluate (${ruleCount} rules, ${storage}, recording on)`, evaluateRuns[round]!));
      console.log(row(`${round + 1}, same app, executions in memory only (diagnostic)`, inMemoryRuns[round]!));
    }
    const bareMedian = median(bareRuns.map((f) => f.requests));
    const evaluateMedian = median(evaluateRuns.map((f) => f.requests));
    const ratio = evaluateMedian / bareMedian;
    console.log('');
    console.log(
      `median requests/s: bare ${Math.round(bareMedian)}, evaluate ${Math.round(evaluateMedian)}; p50/p99 of evaluate (median round): ` +
        `${median(evaluateRuns.map((f) => f.p50))}/${median(evaluateRuns.map((f) => f.p99))} ms`,
    );
    if (fixedRate === undefined) {
      console.log(
        `evaluate reaches ${(ratio * 100).toFixed(1)}% of the bare route (target: at least 70%) -> ${ratio >= 0.7 ? 'PASS' : 'FAIL'}`,
      );
    } else {
      const cpu = (runs: Figures[]): string => median(runs.map((f) => f.cpuUs ?? Number.NaN)).toFixed(0);
      console.log(
        `every route held at ${fixedRate} requests/s (no throughput target): server CPU µs/request, median round: ` +
          `bare ${cpu(bareRuns)}, evaluate ${cpu(evaluateRuns)}, in memory only ${cpu(inMemoryRuns)}`,
      );
    }

    await stop(bare);
    await stop(inMemory);
    const stopping = performance.now();
    const exitCode = await stop(service);
    console.log(
      `service stopped with exit code ${exitCode} after ${((performance.now() - stopping) / 1_000).toFixed(1)} s (writing pending executions)`,
    );
    const recorded = await countExecutions(dataDir, databaseUrl);
    // autocannon counts only the replies that arrive before its clock stops; the service answered (and recorded) a few more.
    console.log(
      `executions recorded: ${recorded}; evaluations autocannon counted: ${evaluated} -> ${recorded >= evaluated ? 'none lost' : 'LOST'}`,
    );
    if (ratio < 0.7 || exitCode !== 0 || recorded < evaluated) process.exitCode = 1;
  } finally {
    await rm(dataDir, { recursive: true, force: true });
    if (values.pg) {
      const admin = new pg.Client({ connectionString: adminUrl });
      await admin.connect();
      await admin.query(`drop database if exists ${database} with (force)`);
      await admin.end();
    }
  }
}

// A child stops on SIGTERM through exit, so --cpu-profile's profile is written.
if (process.argv[2]?.startsWith('--serve-')) process.once('SIGTERM', () => process.exit(0));
if (process.argv[2] === '--serve-bare') await serveBare();
else if (process.argv[2] === '--serve-in-memory') await serveInMemory(Number(process.argv[3]));
else await main();
