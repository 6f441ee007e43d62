// The local stack: Kafka, a Confluent-compatible schema registry, Redis and PostgreSQL for tests and `npm run dev`.
// Per service: an endpoint from the environment, else a container (when a runtime answers), else a local process.
import { rm } from 'node:fs/promises';
import { cacheDir } from './cache-dir.ts';
import { containerRuntimeAnswers, startContainer } from './containers.ts';
import { startKafkaProcess } from './kafka-process.ts';
import { findPostgres } from './postgres-probe.ts';
import { kafkaAnswers, postgresAnswers, redisAnswers, registryAnswers } from './probes.ts';
import { startRedis } from './redis-process.ts';
import { startRegistryProcess } from './registry-process.ts';
import { createRunDir, keepFailedRunDir } from './run-dir.ts';
import { containersAllowed, ENDPOINT_VARIABLES, endpointsFromEnv, redact, requestedServices } from './stack-environment.ts';
import type { LocalStack, LocalStackOptions, Log, ProvidedService, ServiceName, ServiceSource, StartContext } from './types.ts';
import { describeError, waitUntil } from './wait-until.ts';

export { cacheDir } from './cache-dir.ts';
export { ENDPOINT_VARIABLES } from './stack-environment.ts';
export type { LocalStack, LocalStackOptions, Log, ServiceName, ServiceSource } from './types.ts';
export { SERVICE_NAMES } from './types.ts';
export { APICURIO_VERSION, CCOMPAT_PATH, KAFKA_VERSION } from './versions.ts';

type Outcome = ProvidedService | { readonly source: 'unavailable'; readonly reason: string };

const SOURCE_WORDS: Record<ServiceSource, string> = {
  env: 'the environment',
  testcontainers: 'container',
  process: 'local process',
  existing: 'server already running',
  unavailable: 'nowhere',
};

const stderrLog: Log = (line) => void process.stderr.write(`local stack: ${line}\n`);

/** Brings up the requested services (all four by default) and resolves once every one of them answers. */
export async function startLocalStack(options: LocalStackOptions = {}): Promise<LocalStack> {
  const began = performance.now();
  const env = options.env ?? process.env;
  const log = options.log ?? stderrLog;
  const readyTimeoutMs = options.readyTimeoutMs ?? 120_000;
  const services = requestedServices(options.services, env);
  const fromEnv = endpointsFromEnv(env, services);
  const toStart = services.filter((service) => fromEnv[service] === undefined);
  const useContainers = toStart.length > 0 && containersAllowed(env) && (await containerRuntimeAnswers(env));
  const runDir = toStart.length > 0 && !useContainers ? await createRunDir() : undefined;
  const context: StartContext = { cacheDir: cacheDir(env), runDir: runDir ?? '', log, readyTimeoutMs };

  const provide = async (service: ServiceName): Promise<Outcome> => {
    const started = performance.now();
    const outcome = await provideOne(service, fromEnv[service], useContainers, context, env);
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    if (outcome.source === 'unavailable') log(`${service} unavailable: ${outcome.reason}`);
    else {
      const note = outcome.note === undefined ? '' : ` (${outcome.note})`;
      log(`${service} from ${SOURCE_WORDS[outcome.source]} on ${redact(outcome.endpoint)}${note} in ${seconds}s`);
    }
    return outcome;
  };

  // Kafka and the registry are slow JVM starts: everything starts at once.
  const settled = await Promise.allSettled(services.map(provide));
  const outcomes = new Map<ServiceName, Outcome>();
  const failures: string[] = [];
  settled.forEach((result, index) => {
    const service = services[index]!;
    if (result.status === 'fulfilled') outcomes.set(service, result.value);
    else failures.push(`${service}: ${describeError(result.reason)}`);
  });

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      await Promise.allSettled([...outcomes.values()].map((outcome) => ('stop' in outcome ? outcome.stop() : undefined)));
      if (runDir !== undefined) await rm(runDir, { recursive: true, force: true });
    })();
    return stopping;
  };
  if (failures.length > 0) {
    // Keep the run folder: the errors point at the logs inside it.
    await Promise.allSettled([...outcomes.values()].map((outcome) => ('stop' in outcome ? outcome.stop() : undefined)));
    if (runDir !== undefined) await keepFailedRunDir(runDir).catch(() => undefined);
    throw new Error(`the local stack could not start:\n${failures.join('\n')}`);
  }

  const endpoint = (service: ServiceName) => {
    const outcome = outcomes.get(service);
    return outcome !== undefined && 'endpoint' in outcome ? outcome.endpoint : undefined;
  };
  const sources: Partial<Record<ServiceName, ServiceSource>> = {};
  for (const [service, outcome] of outcomes) sources[service] = outcome.source;
  log(`ready in ${((performance.now() - began) / 1000).toFixed(1)}s`);
  return {
    kafkaBrokers: endpoint('kafka')?.split(',') ?? [],
    schemaRegistryUrl: endpoint('registry'),
    redisUrl: endpoint('redis'),
    databaseUrl: endpoint('postgres'),
    sources,
    stop,
  };
}

async function provideOne(
  service: ServiceName,
  given: string | undefined,
  useContainers: boolean,
  context: StartContext,
  env: Readonly<Record<string, string | undefined>>,
): Promise<Outcome> {
  if (given !== undefined) {
    await checkGiven(service, given, Math.min(context.readyTimeoutMs, 20_000));
    return { endpoint: given, source: 'env', note: `$${ENDPOINT_VARIABLES[service]}`, stop: async () => undefined };
  }
  if (useContainers) return startContainer(service, context.readyTimeoutMs);
  switch (service) {
    case 'kafka':
      return startKafkaProcess(context, env);
    case 'registry':
      return startRegistryProcess(context, env);
    case 'redis':
      return startRedis(context, env);
    case 'postgres':
      return findPostgres();
  }
}

/** An endpoint named in the environment must answer: a typo should fail here, not as a timeout deep inside a test. */
async function checkGiven(service: ServiceName, endpoint: string, timeoutMs: number): Promise<void> {
  if (service === 'redis' && endpoint.startsWith('rediss:')) return;
  const probe = {
    kafka: () => kafkaAnswers(endpoint.split(',')),
    registry: () => registryAnswers(endpoint),
    redis: () => redisAnswers(endpoint),
    postgres: () => postgresAnswers(endpoint),
  }[service];
  const ready = await waitUntil(probe, { timeoutMs, intervalMs: 250 });
  if (!ready.ok) {
    throw new Error(
      `${ENDPOINT_VARIABLES[service]}=${redact(endpoint)} did not answer within ${timeoutMs} ms: ${describeError(ready.lastError)}`,
    );
  }
}
