// Kafka throughput side by side: a kafkajs passthrough (consume, re-produce unchanged) against the evaluation pipeline
// with 1,000 rules, on the same broker and the same preloaded facts; then end-to-end latency at a moderate fixed rate.
// Usage: npm run bench:kafka [-- --messages 50000 --rounds 3 --rate 500 --seconds 10 --variants pglite,postgres,unrecorded
// --cpu-profile DIR]. KAFKA_BROKERS picks a running broker, else the local stack starts one; DATABASE_URL records executions
// in PostgreSQL instead of PGlite (in a temporary data directory, as the service keeps it on disk). --cpu-profile writes
// one .cpuprofile per timed contender and round.
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type Admin, type EachBatchPayload, Kafka, logLevel, Partitioners } from 'kafkajs';
import pino from 'pino';
import type { KafkaConfig } from '../src/config.ts';
import type { ConditionNode } from '../src/contracts/condition-dsl.ts';
import { Evaluator } from '../src/evaluation/evaluator.ts';
import { RuleCatalog } from '../src/evaluation/rule-catalog.ts';
import { BatchProcessor } from '../src/kafka/batch-processor.ts';
import { evaluateWith, startKafkaPipeline } from '../src/kafka/index.ts';
import { printProcessWarnings } from '../src/logger.ts';
import { openStore, type SqlStore } from '../src/store/index.ts';
import { keepTickShape } from '../src/tick-shape.ts';
import { freshPostgres } from './lib/fresh-postgres.ts';
import { mulberry32 } from './lib/prng.ts';

// kafkajs's harmless negative-timeout warning would interleave with the report.
printProcessWarnings();
const { values: args } = parseArgs({
  options: {
    messages: { type: 'string', default: '50000' },
    rules: { type: 'string', default: '1000' },
    rate: { type: 'string', default: '500' },
    seconds: { type: 'string', default: '10' },
    partitions: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '3' },
    variants: { type: 'string', default: 'pglite,postgres,unrecorded' },
    'cpu-profile': { type: 'string' },
    'run-size': { type: 'string' },
  },
});
const VARIANTS = new Set(args.variants.split(',').map((name) => name.trim()));
const PROFILE_DIR = args['cpu-profile'];
// The pipeline's maxRunSize tuning; its default when absent.
const RUN_SIZE = args['run-size'] === undefined ? undefined : Number(args['run-size']);
const MESSAGES = Number(args.messages);
const RULES = Number(args.rules);
const RATE = Number(args.rate);
const SECONDS = Number(args.seconds);
const PARTITIONS = Number(args.partitions);
const ROUNDS = Number(args.rounds);

const COUNTRIES = ['US', 'CA', 'FR', 'DE', 'GB', 'JP', 'BR', 'IN', 'ES', 'IT'];
const CHANNELS = ['web', 'app', 'pos'];

/** Fraud-style rules over amount, country, channel and account age, a few percent of which fire per fact. */
function ruleCondition(next: () => number, index: number): ConditionNode {
  const country = COUNTRIES[index % COUNTRIES.length]!;
  const threshold = Math.round(1_000 + next() * 9_000);
  switch (index % 4) {
    case 0:
      return {
        type: 'and',
        children: [
          { type: 'condition', field: 'amount', op: '>', value: threshold },
          { type: 'condition', field: 'country', op: '==', value: country },
        ],
      };
    case 1:
      return {
        type: 'and',
        children: [
          { type: 'condition', field: 'channel', op: '==', value: CHANNELS[index % CHANNELS.length]! },
          { type: 'condition', field: 'account_age_days', op: '<', value: Math.round(next() * 30) },
          { type: 'condition', field: 'amount', op: '>=', value: threshold },
        ],
      };
    case 2:
      return { type: 'condition', field: 'merchant_id', op: 'in', value: [`m-${index}`, `m-${index + 1}`, `m-${index + 2}`] };
    default:
      return {
        type: 'or',
        children: [
          { type: 'condition', field: 'amount', op: 'between', value: [threshold, threshold + 50] },
          { type: 'condition', field: 'customer.tier', op: '==', value: `tier-${index}` },
        ],
      };
  }
}

function factValue(next: () => number, index: number): string {
  return JSON.stringify({
    facts: {
      amount: Math.round(next() * 10_000),
      country: COUNTRIES[Math.floor(next() * COUNTRIES.length)],
      channel: CHANNELS[Math.floor(next() * CHANNELS.length)],
      account_age_days: Math.floor(next() * 3_650),
      merchant_id: `m-${Math.floor(next() * 2_000)}`,
      customer: { id: `c-${index}`, tier: `tier-${Math.floor(next() * 5_000)}` },
    },
    domain: 'payments',
  });
}

/** KAFKA_BROKERS when set (the local stack takes it as given), else a broker the local stack starts. */
async function brokers(): Promise<{ brokers: string[]; stop: () => Promise<void> }> {
  const { startLocalStack } = await import('../dev/local-stack/index.ts');
  const stack = await startLocalStack({ services: ['kafka'] });
  return { brokers: stack.kafkaBrokers, stop: () => stack.stop() };
}

/** Sum of the group's committed offsets on a topic (-1, "none", counts 0). */
async function committed(admin: Admin, groupId: string, topic: string): Promise<number> {
  const [offsets] = await admin.fetchOffsets({ groupId, topics: [topic] });
  return (offsets?.partitions ?? []).reduce((sum, entry) => sum + Math.max(0, Number(entry.offset)), 0);
}

/**
 * Messages per second a group commits: the clock starts at the first commit (so the group join, the same for every
 * contender, is not counted) and stops once all are committed and `drain` (pending execution writes) has finished,
 * so a backlog left to the database is not counted as throughput. Polls every 20 ms.
 */
interface Measured {
  /** Messages per second, wall clock. */
  rate: number;
  /** CPU time this process spent per message (user + system), in microseconds: unlike the rate, other processes on the machine do not move it. */
  cpuUsPerMessage: number;
}

async function measureCommitRate(
  admin: Admin,
  groupId: string,
  topic: string,
  total: number,
  drain?: () => Promise<void>,
): Promise<Measured> {
  let start: { at: number; count: number; cpu: NodeJS.CpuUsage } | undefined;
  for (;;) {
    const count = await committed(admin, groupId, topic);
    if (start === undefined && count > 0) start = { at: performance.now(), count, cpu: process.cpuUsage() };
    if (count >= total && start !== undefined) {
      await drain?.();
      const elapsed = (performance.now() - start.at) / 1_000;
      const cpu = process.cpuUsage(start.cpu);
      const messages = count - start.count;
      return {
        rate: elapsed > 0 ? messages / elapsed : Number.POSITIVE_INFINITY,
        cpuUsPerMessage: messages > 0 ? (cpu.user + cpu.system) / messages : Number.NaN,
      };
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The baseline: consume, re-produce each message unchanged, commit after the acknowledgement; the pipeline's delivery discipline without the work. */
async function passthrough(kafka: Kafka, admin: Admin, from: string, to: string): Promise<Measured> {
  const groupId = `bench-passthrough-${randomUUID()}`;
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: Partitioners.DefaultPartitioner });
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 500 });
  await producer.connect();
  await consumer.connect();
  await consumer.subscribe({ topics: [from], fromBeginning: true });
  const eachBatch = async ({ batch, resolveOffset, commitOffsetsIfNecessary, heartbeat }: EachBatchPayload) => {
    for (let start = 0; start < batch.messages.length; start += 1_000) {
      const run = batch.messages.slice(start, start + 1_000);
      await producer.sendBatch({
        acks: -1,
        topicMessages: [
          { topic: to, messages: run.map((message) => ({ key: message.key, value: message.value, headers: message.headers })) },
        ],
      });
      const last = run[run.length - 1]!.offset;
      await commitOffsetsIfNecessary({
        topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: String(Number(last) + 1) }] }],
      });
      resolveOffset(last);
      await heartbeat();
    }
  };
  await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, partitionsConsumedConcurrently: 3, eachBatch });
  const rate = await measureCommitRate(admin, groupId, from, MESSAGES);
  await consumer.disconnect();
  await producer.disconnect();
  await admin.deleteGroups([groupId]).catch(() => undefined);
  return rate;
}

/** Runs `work` under the V8 CPU profiler when --cpu-profile is given, writing DIR/<name>.cpuprofile. */
async function profiled<T>(name: string, work: () => Promise<T>): Promise<T> {
  if (PROFILE_DIR === undefined) return work();
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  try {
    return await work();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    session.disconnect();
    await mkdir(PROFILE_DIR, { recursive: true });
    await writeFile(join(PROFILE_DIR, `${name}.cpuprofile`), JSON.stringify(profile));
  }
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** Runs the batch processor (decode, evaluate, build results) over generated facts with execution records discarded. */
async function warmPipelineCode(catalog: RuleCatalog, next: () => number): Promise<void> {
  const evaluator = new Evaluator({ catalog, executions: { record: () => undefined } });
  const processor = new BatchProcessor({ decoder: undefined, evaluate: evaluateWith(evaluator), maxUnexpectedAttempts: 1 });
  for (let run = 0; run < 20; run++) {
    const messages = Array.from({ length: 1_000 }, (_, index) => ({
      key: Buffer.from(`customer-${index}`),
      value: Buffer.from(factValue(next, index)),
      offset: String(index),
      headers: { 'correlation-id': `warm-${index}` },
    }));
    await processor.process('warm-up', 0, messages);
  }
}

interface Variant {
  label: string;
  evaluator: Evaluator;
  /** Waits until every recorded execution is written. */
  drain: () => Promise<void>;
  /** KAFKA_RECORD_EXECUTIONS; true when absent. */
  recordExecutions?: boolean;
}

/** Runs the pipeline on a fresh group over the preloaded facts, then stops it; returns its sustained rate. */
async function pipelineRate(admin: Admin, base: KafkaConfig, variant: Variant): Promise<Measured> {
  const config: KafkaConfig = {
    ...base,
    groupId: `${base.groupId}-${variant.label.replaceAll(/\W+/g, '-')}`,
    recordExecutions: variant.recordExecutions ?? true,
  };
  const pipeline = await startKafkaPipeline({
    config,
    evaluator: variant.evaluator,
    logger: pino({ level: 'warn' }),
    logLevel: 'warn',
    ...(RUN_SIZE === undefined ? {} : { tuning: { maxRunSize: RUN_SIZE } }),
  });
  try {
    return await measureCommitRate(admin, config.groupId, config.factsTopic, MESSAGES, variant.drain);
  } finally {
    await pipeline.stop();
  }
}

async function createRules(store: SqlStore): Promise<void> {
  const next = mulberry32(7);
  for (let index = 0; index < RULES; index++) {
    const rule = { name: `rule-${index}`, domain: 'payments', condition_dsl: ruleCondition(next, index), action: `action-${index % 25}` };
    await store.rules.create({ ...rule, priority: index % 7 }, 'bench');
  }
}

async function main(): Promise<void> {
  // As the service's main.ts does first (src/tick-shape.ts): the pipeline runs in this process.
  keepTickShape();
  const stack = await brokers();
  const id = randomUUID().slice(0, 8);
  const topics = {
    facts: `bench-facts-${id}`,
    passthrough: `bench-passthrough-${id}`,
    results: `bench-results-${id}`,
    dlq: `bench-dlq-${id}`,
    changelog: `bench-changelog-${id}`,
    latencyFacts: `bench-latency-${id}`,
  };
  const kafka = new Kafka({ clientId: 'kafka-bench', brokers: stack.brokers, logLevel: logLevel.ERROR });
  const admin = kafka.admin();
  await admin.connect();
  const cleanups: (() => Promise<void>)[] = [];
  try {
    await admin.createTopics({
      waitForLeaders: true,
      topics: [topics.facts, topics.passthrough, topics.results, topics.dlq, topics.latencyFacts].map((topic) => ({
        topic,
        numPartitions: PARTITIONS,
      })),
    });

    // The service's default store (embedded PGlite in a data directory on disk) and, when a server answers, PostgreSQL;
    // the same 1,000 rules in each.
    const dataDir = await mkdtemp(join(tmpdir(), 'rules-kafka-bench-'));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const pglite = await openStore({ dataDir });
    cleanups.push(() => pglite.close());
    await createRules(pglite);
    const pgliteCatalog = await RuleCatalog.open({ rules: pglite.rules });
    const pgliteEvaluator = new Evaluator({ catalog: pgliteCatalog, executions: pglite.executions });
    const variants: Variant[] = [];
    if (VARIANTS.has('pglite')) {
      variants.push({ label: 'PGlite executions', evaluator: pgliteEvaluator, drain: () => pglite.executions.flush() });
    }
    const database = VARIANTS.has('postgres') ? await freshPostgres(`kafka_bench_${id.replaceAll('-', '')}`) : undefined;
    if (database !== undefined) {
      const postgres = await openStore({ dataDir: '', databaseUrl: database.url });
      cleanups.push(async () => {
        await postgres.close();
        await database.drop();
      });
      await createRules(postgres);
      const catalog = await RuleCatalog.open({ rules: postgres.rules });
      variants.push({
        label: 'PostgreSQL executions',
        evaluator: new Evaluator({ catalog, executions: postgres.executions }),
        drain: () => postgres.executions.flush(),
      });
    }
    // KAFKA_RECORD_EXECUTIONS=false: the results topic is the only record, which shows what the store costs.
    if (VARIANTS.has('unrecorded')) {
      variants.push({
        label: 'executions not recorded (KAFKA_RECORD_EXECUTIONS=false)',
        evaluator: pgliteEvaluator,
        drain: () => pglite.executions.flush(),
        recordExecutions: false,
      });
    }

    const next = mulberry32(42);
    const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
    await producer.connect();
    cleanups.push(() => producer.disconnect());
    for (let start = 0; start < MESSAGES; start += 5_000) {
      const messages = [];
      for (let index = start; index < Math.min(MESSAGES, start + 5_000); index++) {
        messages.push({ key: `customer-${index % 1_000}`, value: factValue(next, index), headers: { 'correlation-id': `c-${index}` } });
      }
      await producer.send({ topic: topics.facts, acks: -1, messages });
    }
    console.log(`preloaded ${MESSAGES} facts on ${PARTITIONS} partitions; ${RULES} rules at revision ${pgliteCatalog.revision}`);

    const base: KafkaConfig = {
      brokers: stack.brokers,
      factsTopic: topics.facts,
      resultsTopic: topics.results,
      dlqTopic: topics.dlq,
      changelogTopic: topics.changelog,
      groupId: `bench-pipeline-${id}`,
      exactlyOnce: false,
      streaming: false,
      recordExecutions: true,
      partitions: PARTITIONS,
      maxResultBytes: 1_000_000,
      schemaRegistryUrl: undefined,
    };

    // Steady state for both sides: one untimed passthrough warms kafkajs, one untimed evaluation pass warms the
    // engine and the pipeline's own code (JIT), without touching any store.
    await passthrough(kafka, admin, topics.facts, topics.passthrough);
    await warmPipelineCode(pgliteCatalog, next);

    // Rounds interleave the contenders, so load from other processes on the machine hits them alike; each pipeline
    // rate is compared with the passthrough of its own round, and the medians are reported.
    const passthroughRuns: Measured[] = [];
    const runs = variants.map(() => [] as Measured[]);
    const shares = variants.map(() => [] as number[]);
    for (let round = 1; round <= ROUNDS; round++) {
      const baseline = await profiled(`passthrough-r${round}`, () => passthrough(kafka, admin, topics.facts, topics.passthrough));
      passthroughRuns.push(baseline);
      const line = [`round ${round}: passthrough ${baseline.rate.toFixed(0)} msg/s`];
      for (const [index, variant] of variants.entries()) {
        const measured = await profiled(`pipeline-${variant.label.replaceAll(/\W+/g, '-')}-r${round}`, () =>
          pipelineRate(admin, { ...base, groupId: `${base.groupId}-r${round}` }, variant),
        );
        runs[index]!.push(measured);
        shares[index]!.push(measured.rate / baseline.rate);
        line.push(`${variant.label} ${measured.rate.toFixed(0)} (${((100 * measured.rate) / baseline.rate).toFixed(0)}%)`);
      }
      console.log(line.join('; '));
    }
    const passthroughCpu = median(passthroughRuns.map((run) => run.cpuUsPerMessage));
    console.log(
      `(a) kafkajs passthrough: median ${median(passthroughRuns.map((run) => run.rate)).toFixed(0)} msg/s, ${passthroughCpu.toFixed(1)} µs CPU/msg`,
    );
    for (const [index, variant] of variants.entries()) {
      const cpu = median(runs[index]!.map((run) => run.cpuUsPerMessage));
      console.log(
        `(b${index + 1}) pipeline, ${RULES} rules, ${variant.label}: median ${median(runs[index]!.map((run) => run.rate)).toFixed(0)} msg/s ` +
          `= ${(100 * median(shares[index]!)).toFixed(1)}% of its round's passthrough; ${cpu.toFixed(1)} µs CPU/msg ` +
          `(passthrough CPU / pipeline CPU = ${((100 * passthroughCpu) / cpu).toFixed(1)}%; target >= 80%)`,
      );
    }

    // Latency runs on topics of its own with the default configuration (PGlite), so no backlog is in the way.
    const latencyConfig: KafkaConfig = { ...base, factsTopic: topics.latencyFacts, groupId: `${base.groupId}-latency` };
    const latencyPipeline = await startKafkaPipeline({
      config: latencyConfig,
      evaluator: pgliteEvaluator,
      logger: pino({ level: 'warn' }),
      logLevel: 'warn',
    });
    cleanups.push(() => latencyPipeline.stop());

    // Latency: facts at a fixed rate, each stamped with its send time; measured when its result arrives.
    const sentAt = new Map<string, number>();
    const latencies: number[] = [];
    const reader = kafka.consumer({ groupId: `bench-reader-${id}`, maxWaitTimeInMs: 100 });
    await reader.connect();
    await reader.subscribe({ topics: [topics.results], fromBeginning: false });
    let readerReady!: () => void;
    const joined = new Promise<void>((resolve) => {
      readerReady = resolve;
    });
    reader.on(reader.events.GROUP_JOIN, () => readerReady());
    await reader.run({
      eachMessage: async ({ message }) => {
        const key = message.headers?.['correlation-id']?.toString();
        const sent = key === undefined ? undefined : sentAt.get(key);
        if (sent !== undefined) latencies.push(performance.now() - sent);
      },
    });
    await joined;
    // Let the reader's position settle on the end of the topic before the first timed fact.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const total = RATE * SECONDS;
    const begin = performance.now();
    for (let index = 0; index < total; index++) {
      const due = begin + (index * 1_000) / RATE;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      const key = `latency-${index}`;
      sentAt.set(key, performance.now());
      producer.send({
        topic: topics.latencyFacts,
        messages: [{ key: `customer-${index % 1_000}`, value: factValue(next, index), headers: { 'correlation-id': key } }],
      });
    }
    const deadline = performance.now() + 30_000;
    while (latencies.length < total && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    const sorted = [...latencies].sort((a, b) => a - b);
    console.log(
      `(c) end-to-end latency, PGlite executions, at ${RATE} msg/s for ${SECONDS}s (${latencies.length}/${total} results): p50 ${percentile(sorted, 50).toFixed(1)} ms, p99 ${percentile(sorted, 99).toFixed(1)} ms`,
    );

    await reader.disconnect();
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    await admin.deleteTopics({ topics: Object.values(topics) }).catch(() => undefined);
    await admin.disconnect();
    await stack.stop();
  }
}

await main();
