// Execution recording: what recording costs the event loop per execution at a steady rate, beside a floor that makes the
// same texts (request, outcome, id) and records nothing. Recording runs against embedded PGlite and, when one answers,
// PostgreSQL. Run: npm run bench:recording [-- --rate 30000 --seconds 5 --rounds 3].
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { newExecutionId } from '../src/evaluation/execution-id.ts';
import { openStore, type SqlStore } from '../src/store/index.ts';
import type { SerializedExecution } from '../src/store/types.ts';
import { freshPostgres } from './lib/fresh-postgres.ts';

const { values } = parseArgs({
  options: {
    rate: { type: 'string', default: '30000' },
    seconds: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '3' },
  },
});
const RATE = Number(values.rate);
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);

/** An execution as POST /api/v1/evaluate hands it over: the body as received and the reply it sent. */
function execution(index: number): SerializedExecution {
  const createdMs = Date.now();
  const id = newExecutionId(createdMs);
  const facts = {
    amount: index % 10_000,
    country: 'DE',
    channel: 'web',
    account_age_days: index % 3_650,
    merchant_id: `m-${index % 2_000}`,
    customer: { id: `c-${index}`, tier: `tier-${index % 5_000}` },
  };
  return {
    execution_id: id,
    source: 'http',
    domain: 'payments',
    createdMs,
    requestJson: JSON.stringify({ facts, domain: 'payments' }),
    outcomeJson: JSON.stringify({
      execution_id: id,
      fired_rules: [index % 1_000, 17, 230],
      actions: ['a-3', 'a-17'],
      latency_ms: 0.012,
      revision: 1_000,
    }),
  };
}

interface Cost {
  /** Event-loop (main thread) CPU per execution, µs. */
  main: number;
  /** CPU of every thread of this process per execution, µs. */
  process: number;
}

/** Makes RATE executions a second for `seconds`, each handed to `record`, in 1 ms ticks as a loaded server would. */
async function paced(seconds: number, record: (execution: SerializedExecution) => void): Promise<void> {
  const total = RATE * seconds;
  const start = performance.now();
  let made = 0;
  while (made < total) {
    const due = Math.min(total, Math.floor(((performance.now() - start) * RATE) / 1_000));
    for (; made < due; made++) record(execution(made));
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

/** CPU per execution of one paced run; `drain` (the store's flush) is part of what is measured. */
async function measure(record: (execution: SerializedExecution) => void, drain: () => Promise<void>): Promise<Cost> {
  const mainBefore = process.threadCpuUsage();
  const processBefore = process.cpuUsage();
  await paced(SECONDS, record);
  await drain();
  const main = process.threadCpuUsage(mainBefore);
  const all = process.cpuUsage(processBefore);
  const count = RATE * SECONDS;
  return { main: (main.user + main.system) / count, process: (all.user + all.system) / count };
}

async function postgresStore(): Promise<{ store: SqlStore; drop: () => Promise<void> } | undefined> {
  const database = await freshPostgres(`recording_bench_${process.pid}`);
  if (database === undefined) return undefined;
  const store = await openStore({ dataDir: '', databaseUrl: database.url });
  return {
    store,
    drop: async () => {
      await store.close();
      await database.drop();
    },
  };
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'rules-recording-bench-'));
  const pglite = await openStore({ dataDir });
  const postgres = await postgresStore();
  try {
    let sink = 0;
    const contenders: { name: string; record: (execution: SerializedExecution) => void; drain: () => Promise<void> }[] = [
      { name: 'floor: the same texts, not recorded', record: (e) => (sink += e.requestJson.length), drain: async () => undefined },
      { name: 'recorded, embedded PGlite', record: (e) => pglite.executions.record(e), drain: () => pglite.executions.flush() },
    ];
    if (postgres !== undefined) {
      const executions = postgres.store.executions;
      contenders.push({ name: 'recorded, PostgreSQL', record: (e) => executions.record(e), drain: () => executions.flush() });
    }
    console.log(`${RATE} executions/s for ${SECONDS} s per contender and round, ${ROUNDS} rounds (first second of each: warm-up)`);
    const costs = contenders.map(() => [] as Cost[]);
    for (let round = 0; round < ROUNDS; round++) {
      for (const [index, contender] of contenders.entries()) {
        await paced(1, contender.record);
        await contender.drain();
        costs[index]!.push(await measure(contender.record, contender.drain));
      }
    }
    if (sink < 0) console.log(sink);
    console.log('');
    console.log('| Contender | Event loop µs/execution (median; rounds) | All threads µs/execution (median) |');
    console.log('|---|---|---|');
    const floor = median(costs[0]!.map((cost) => cost.main));
    for (const [index, contender] of contenders.entries()) {
      const runs = costs[index]!;
      const main = median(runs.map((cost) => cost.main));
      const rounds = runs.map((cost) => cost.main.toFixed(2)).join(', ');
      const over = index === 0 ? '' : ` (+${(main - floor).toFixed(2)} over the floor)`;
      console.log(`| ${contender.name} | ${main.toFixed(2)}${over}; ${rounds} | ${median(runs.map((cost) => cost.process)).toFixed(2)} |`);
    }
  } finally {
    await pglite.close();
    await postgres?.drop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

await main();
