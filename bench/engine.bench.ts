// Engine benchmark: this engine, json-rules-engine, a naive closure loop and the JSON.parse floor, side by side.
// Usage: npm run bench [-- --quick] [-- --sizes=1000,10000] [-- --profiles=selective,grouped]
import os from 'node:os';
import { hrtime } from 'node:process';
import type { Rule } from '../src/contracts/rule.ts';
import { adversarialProfile } from './lib/adversarial-profile.ts';
import { type Checked, checkAgreement, DisagreementError } from './lib/agreement.ts';
import { type BenchOptions, parseBenchOptions, UsageError } from './lib/cli-options.ts';
import { buildEngine, compileCondition } from './lib/engine-contender.ts';
import type { SyncEvaluate } from './lib/fired-rules.ts';
import { groupedProfile } from './lib/grouped-profile.ts';
import { buildJsonRulesEngine } from './lib/json-rules-engine-peer.ts';
import { machineHeader } from './lib/machine.ts';
import { buildNaiveLoop } from './lib/naive-loop.ts';
import type { Profile, ProfileName, ProfileOptions } from './lib/profile.ts';
import { referenceMatches } from './lib/reference-evaluator.ts';
import { selectiveProfile } from './lib/selective-profile.ts';
import { formatCount, type ResultRow, renderTable } from './lib/table.ts';
import { type CellSummary, targetLines } from './lib/targets.ts';
import { type TimingBudget, timeAsync, timerOverheadUs, timeSync } from './lib/timing.ts';

const SEED = 4_711;

interface RunPlan {
  factPool: number;
  sync: TimingBudget;
  /** json-rules-engine: no new evaluation starts after this budget; the agreement check on its sample is its warm-up. */
  slow: TimingBudget;
  /** Facts json-rules-engine is checked and timed on, by rule count. */
  jsonRulesEngineSample: (ruleCount: number) => number;
  /** Facts the naive loop is checked and timed on. */
  naiveSample: (ruleCount: number) => number;
  /** Facts the reference interpreter is checked on. */
  referenceSample: (ruleCount: number) => number;
}

const FULL: RunPlan = {
  factPool: 1_000,
  sync: { warmupMs: 300, latencyMs: 1_000, throughputMs: 1_000, throughputRounds: 5, maxSamples: 1_000_000 },
  slow: { warmupMs: 0, latencyMs: 3_000, throughputMs: 0, throughputRounds: 0, maxSamples: 1_000_000 },
  jsonRulesEngineSample: (rules) => (rules <= 1_000 ? 200 : rules <= 10_000 ? 20 : 2),
  naiveSample: (rules) => (rules < 100_000 ? 1_000 : 100),
  referenceSample: (rules) => (rules <= 10_000 ? 1_000 : 100),
};

const QUICK: RunPlan = {
  factPool: 200,
  sync: { warmupMs: 100, latencyMs: 250, throughputMs: 250, throughputRounds: 5, maxSamples: 1_000_000 },
  slow: { warmupMs: 0, latencyMs: 750, throughputMs: 0, throughputRounds: 0, maxSamples: 1_000_000 },
  jsonRulesEngineSample: (rules) => (rules <= 1_000 ? 50 : rules <= 10_000 ? 5 : 2),
  naiveSample: (rules) => (rules < 100_000 ? 200 : 50),
  referenceSample: (rules) => (rules <= 10_000 ? 200 : 50),
};

const PROFILES: Record<ProfileName, (options: ProfileOptions) => Profile> = {
  selective: selectiveProfile,
  adversarial: adversarialProfile,
  grouped: groupedProfile,
};

const PROFILE_WORDING: Record<ProfileName, string> = {
  selective: 'Every rule gated by `merchant ==` (or `mcc ==` plus `country in`) and 1–3 range, inequality or contains tests',
  adversarial: 'Every rule is `amount > t1 and score < t2` with random thresholds: no gate to prune on',
  grouped:
    'Every rule is `country == c and amount > t`, or `channel == ch and account_age_days < d and amount >= t`: 24 distinct gates, each shared by many rules that differ only in thresholds',
};

interface Built<T> {
  value: T;
  compileMs: number;
  /** CPU time of the compile (this process, all threads), for comparison when the machine is busy. */
  compileCpuMs: number;
  heapMb: number;
}

/** Builds one contender between two full collections: compile time and the heap it retains. */
function measureBuild<T>(build: () => T): Built<T> {
  collectGarbage();
  const heapBefore = process.memoryUsage().heapUsed;
  const cpuBefore = process.cpuUsage();
  const start = hrtime.bigint();
  const value = build();
  const compileMs = Number(hrtime.bigint() - start) / 1e6;
  const cpu = process.cpuUsage(cpuBefore);
  collectGarbage();
  return {
    value,
    compileMs,
    compileCpuMs: (cpu.user + cpu.system) / 1_000,
    heapMb: (process.memoryUsage().heapUsed - heapBefore) / 2 ** 20,
  };
}

function collectGarbage(): void {
  if (globalThis.gc === undefined)
    throw new UsageError('run with node --expose-gc (npm run bench does) so heap figures are measured after a collection');
  globalThis.gc();
}

function loadAverage(): string {
  return os
    .loadavg()
    .map((load) => load.toFixed(2))
    .join(', ');
}

function indexes(count: number): number[] {
  return Array.from({ length: count }, (_, index) => index);
}

function describeSample(count: number, pool: number, budgetMs: number, evaluations: number): string {
  const facts = count >= pool ? `all ${formatCount(pool)} facts` : `sample of ${formatCount(count)} facts`;
  return `${facts}, ${(budgetMs / 1_000).toFixed(budgetMs < 1_000 ? 2 : 0)} s budget, ${formatCount(evaluations)} evaluation${evaluations === 1 ? '' : 's'}`;
}

function firingStats(evaluate: SyncEvaluate, profile: Profile): string {
  let fired = 0;
  let factsWithFire = 0;
  for (const fact of profile.facts) {
    const count = evaluate(fact).fired_rules.length;
    fired += count;
    if (count > 0) factsWithFire++;
  }
  const share = ((factsWithFire / profile.facts.length) * 100).toFixed(0);
  const average = (fired / profile.facts.length).toLocaleString('en-US', { minimumFractionDigits: 1, maximumFractionDigits: 1 });
  return `${average} rules fire per fact on average; ${share}% of facts fire at least one`;
}

async function runCell(name: ProfileName, ruleCount: number, plan: RunPlan): Promise<CellSummary> {
  const profile = PROFILES[name]({ ruleCount, factCount: plan.factPool, seed: SEED });
  const rules: Rule[] = profile.rules;
  const facts = profile.facts;
  const factJson = facts.map((fact) => JSON.stringify(fact));

  const engine = measureBuild(() => buildEngine(rules));
  const naive = measureBuild(() => buildNaiveLoop(rules, compileCondition));
  const jre = measureBuild(() => buildJsonRulesEngine(rules));

  const pool = indexes(facts.length);
  const jreFacts = indexes(Math.min(facts.length, plan.jsonRulesEngineSample(ruleCount)));
  const naiveFacts = indexes(Math.min(facts.length, plan.naiveSample(ruleCount)));
  const reference: Checked = {
    name: 'reference interpreter',
    evaluate: buildNaiveLoop(rules, (dsl) => (fact) => referenceMatches(dsl, fact)),
    factIndexes: indexes(Math.min(facts.length, plan.referenceSample(ruleCount))),
  };
  await checkAgreement(facts, { name: 'engine', evaluate: engine.value, factIndexes: pool }, [
    { name: 'naive loop', evaluate: naive.value, factIndexes: naiveFacts },
    { name: 'json-rules-engine', evaluate: jre.value, factIndexes: jreFacts },
    reference,
  ]);

  const engineTiming = timeSync((index) => engine.value(facts[index]!), facts.length, plan.sync);
  const naiveTiming = timeSync((index) => naive.value(facts[naiveFacts[index]!]!), naiveFacts.length, plan.sync);
  const jreTiming = await timeAsync((index) => jre.value(facts[jreFacts[index]!]!), jreFacts.length, plan.slow);
  const parseTiming = timeSync((index) => JSON.parse(factJson[index]!), facts.length, plan.sync);

  const rows: ResultRow[] = [
    {
      contender: 'engine (indexed)',
      timing: engineTiming,
      compileMs: engine.compileMs,
      heapMb: engine.heapMb,
      timedOn: describeSample(facts.length, facts.length, plan.sync.latencyMs + plan.sync.throughputMs, engineTiming.evaluations),
    },
    {
      contender: 'naive loop',
      timing: naiveTiming,
      compileMs: naive.compileMs,
      heapMb: naive.heapMb,
      timedOn: describeSample(naiveFacts.length, facts.length, plan.sync.latencyMs + plan.sync.throughputMs, naiveTiming.evaluations),
    },
    {
      contender: 'json-rules-engine',
      timing: jreTiming,
      compileMs: jre.compileMs,
      heapMb: jre.heapMb,
      timedOn: describeSample(jreFacts.length, facts.length, plan.slow.latencyMs, jreTiming.evaluations),
    },
    {
      contender: 'JSON.parse (floor)',
      timing: parseTiming,
      compileMs: undefined,
      heapMb: undefined,
      timedOn: describeSample(facts.length, facts.length, plan.sync.latencyMs + plan.sync.throughputMs, parseTiming.evaluations),
    },
  ];

  console.log(`\n### ${name}, ${formatCount(ruleCount)} rules\n`);
  const checked = `engine on all ${formatCount(pool.length)}, naive loop on ${formatCount(naiveFacts.length)}, json-rules-engine on ${formatCount(jreFacts.length)}, reference interpreter on ${formatCount(reference.factIndexes.length)}`;
  console.log(`${PROFILE_WORDING[name]}. ${firingStats(engine.value, profile)}.`);
  console.log(`Fired rules and actions agreed before timing (facts checked: ${checked}).\n`);
  console.log(
    renderTable(rows, { jsonRulesEngineEvalsPerSecond: jreTiming.evalsPerSecond, jsonParseEvalsPerSecond: parseTiming.evalsPerSecond }),
  );

  return {
    profile: name,
    size: ruleCount,
    engineEvalsPerSecond: engineTiming.evalsPerSecond,
    engineEvalsPerCpuSecond: engineTiming.evalsPerCpuSecond,
    engineCompileMs: engine.compileMs,
    engineCompileCpuMs: engine.compileCpuMs,
    jsonRulesEngineEvalsPerSecond: jreTiming.evalsPerSecond,
    jsonParseEvalsPerSecond: parseTiming.evalsPerSecond,
  };
}

async function main(options: BenchOptions): Promise<void> {
  const plan = options.quick ? QUICK : FULL;
  collectGarbage();
  const started = hrtime.bigint();
  console.log('## Engine benchmark\n');
  console.log(
    machineHeader([
      `Run: ${options.quick ? 'quick' : 'full'}, sizes ${options.sizes.map(formatCount).join(', ')}, pool of ${formatCount(plan.factPool)} facts, seed ${SEED}`,
      `Load average at start: ${loadAverage()} (the machine may be shared: figures are noisy)`,
      `Timer: one hrtime.bigint() pair costs ~${timerOverheadUs().toFixed(3)} µs and is included in every p50/p99 sample (wall clock)`,
      'evals/s: wall clock, best of 5 untimed rounds (json-rules-engine: its timed pass); evals/CPU-s: the same evaluations per second of CPU this process used, so other load does not count against it (GC threads do)',
      'compile ms: wall clock from rules to a runnable contender (json-rules-engine: translation + addRule); heap MB: heap retained by it, measured after gc',
      '× columns are evals/s divided by the evals/s of json-rules-engine / of JSON.parse on the same facts (JSON.parse: 0.5× means an evaluation costs twice a parse)',
    ]),
  );
  const cells: CellSummary[] = [];
  for (const profile of options.profiles) {
    for (const size of options.sizes) cells.push(await runCell(profile, size, plan));
  }
  console.log('\n### Targets\n');
  for (const line of targetLines(cells)) console.log(`- ${line}`);
  console.log(`\nTotal run time: ${(Number(hrtime.bigint() - started) / 1e9).toFixed(0)} s; load average at the end: ${loadAverage()}`);
}

try {
  await main(parseBenchOptions(process.argv.slice(2)));
} catch (error) {
  if (error instanceof UsageError || error instanceof DisagreementError) {
    console.error(`${error.name}: ${error.message}`);
    process.exit(error instanceof UsageError ? 2 : 1);
  }
  throw error;
}
