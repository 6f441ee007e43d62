// `npm run dev`: brings up the local stack, runs the service against it, prints how to talk to it; Ctrl-C stops all.
import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { printProcessWarnings } from '../src/logger.ts';
import { claimDevRun, ENDPOINTS_FILE, releaseDevRun, removeEndpoints, writeEndpoints } from './endpoints-file.ts';
import { freePorts } from './local-stack/free-port.ts';
import { type LocalStack, startLocalStack } from './local-stack/index.ts';
import { redact } from './local-stack/stack-environment.ts';
import { type SupervisedProcess, startSupervised } from './local-stack/supervised-process.ts';
import { requestedPort, withoutEndpoints } from './service-env.ts';

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const say = (line: string) => void process.stderr.write(`local stack: ${line}\n`);

async function main(): Promise<void> {
  printProcessWarnings();
  // One run per checkout: a second would take over .local-stack/endpoints.json and the first run's port.
  await claimDevRun();
  // Before the stack: a bad PORT should not cost a Kafka start-up first.
  const port = await servicePort(process.env.PORT);
  const stack = await startLocalStack();
  let service: SupervisedProcess | undefined;
  let stopping = false;
  const shutdown = async (code: number) => {
    // A second Ctrl-C does not wait: the supervisor's exit hook still sends everything SIGTERM.
    if (stopping) process.exit(code);
    stopping = true;
    if (service !== undefined && !service.hasExited()) {
      say('stopping the service');
      await service.stop(15_000);
    }
    say('stopping the stack');
    await stack.stop();
    await removeEndpoints();
    await releaseDevRun();
    process.exit(code);
  };
  // Listening for good (a repeated signal finds shutdown under way) tells the supervisor's hooks the order is ours.
  process.on('SIGINT', () => void shutdown(130));
  process.on('SIGTERM', () => void shutdown(143));
  // A closed terminal: stop everything as for Ctrl-C rather than leave the service running without its stack.
  process.on('SIGHUP', () => void shutdown(129));
  // npm does not pass a SIGTERM sent to `npm run dev` on: once npm is gone (this process re-parented), stop as for one.
  // Once: seen again a second later it would count as a repeated signal and cut the stop short.
  const parent = process.ppid;
  const parentWatch = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(parentWatch);
    if (!stopping) void shutdown(143);
  }, 1_000).unref();

  const databaseUrl = await devDatabase(stack);
  const factsTopic = process.env.KAFKA_FACTS_TOPIC ?? 'rules.facts';
  const resultsTopic = process.env.KAFKA_RESULTS_TOPIC ?? 'rules.results';
  const serviceUrl = `http://127.0.0.1:${port}`;
  const env: NodeJS.ProcessEnv = {
    // A service left out of LOCAL_STACK_SERVICES is left out of the service's environment too, even when exported.
    ...withoutEndpoints(process.env),
    PORT: String(port),
    ...(stack.kafkaBrokers.length === 0 ? {} : { KAFKA_BROKERS: stack.kafkaBrokers.join(',') }),
    ...(stack.schemaRegistryUrl === undefined ? {} : { SCHEMA_REGISTRY_URL: stack.schemaRegistryUrl }),
    ...(stack.redisUrl === undefined ? {} : { REDIS_URL: stack.redisUrl }),
    ...(databaseUrl === undefined ? {} : { DATABASE_URL: databaseUrl }),
  };
  await writeEndpoints({
    kafkaBrokers: stack.kafkaBrokers,
    schemaRegistryUrl: stack.schemaRegistryUrl,
    redisUrl: stack.redisUrl,
    databaseUrl,
    serviceUrl,
    factsTopic,
    resultsTopic,
  });
  const exported = ['PORT', 'KAFKA_BROKERS', 'SCHEMA_REGISTRY_URL', 'REDIS_URL', 'DATABASE_URL'].filter((name) => env[name] !== undefined);
  say(`endpoints (also in ${ENDPOINTS_FILE}):\n${exported.map((name) => `    ${name}=${redact(String(env[name]))}`).join('\n')}`);

  if (!existsSync(MAIN)) {
    say(`${MAIN} does not exist yet: the stack stays up without the service (Ctrl-C to stop)`);
    setInterval(() => undefined, 60_000);
    return;
  }
  // Supervised like the stack's processes: it stops when this process dies, even by SIGKILL.
  const started = startSupervised(process.execPath, [MAIN], { cwd: process.cwd(), env });
  // Supervised processes do not keep this one alive: it lives until Ctrl-C or until the service exits.
  setInterval(() => undefined, 60_000);
  service = started;
  void started.exited.then((code) => {
    if (stopping) return;
    say(`the service exited (${code === null ? 'killed by a signal' : `code ${code}`}); stopping the stack`);
    void shutdown(code ?? 1);
  });
  if (await serviceAnswers(serviceUrl, started)) say(instructions(serviceUrl, factsTopic, resultsTopic, stack.kafkaBrokers.length > 0));
}

function instructions(serviceUrl: string, factsTopic: string, resultsTopic: string, withKafka: boolean): string {
  const json = "-H 'content-type: application/json'";
  return [
    `the service answers on ${serviceUrl} (Ctrl-C stops the service and the stack)`,
    '  1. create a rule (on later runs it is there already: 409 CONFLICT, go on):',
    `     curl -s ${serviceUrl}/api/v1/rules ${json} -d '{"name":"large-amount","domain":"default","condition_dsl":{"type":"condition","field":"amount","op":">","value":100},"action":"review"}'`,
    '  2. evaluate a fact over HTTP:',
    `     curl -s ${serviceUrl}/api/v1/evaluate ${json} -d '{"facts":{"amount":150},"domain":"default"}'`,
    ...(withKafka
      ? [
          `  3. or send it through Kafka (${factsTopic}) and read the result (${resultsTopic}):`,
          `     node dev/produce.ts '{"facts":{"amount":150},"domain":"default"}'`,
          `     node dev/consume.ts ${resultsTopic}`,
        ]
      : ['  (Kafka is not in LOCAL_STACK_SERVICES: the service runs HTTP only)']),
  ].join('\n');
}

/** PORT when given (0 picks a free one); else 8080, or a free port when 8080 is taken (another engineer's service, say). */
async function servicePort(given: string | undefined): Promise<number> {
  const port = requestedPort(given);
  const [free] = await freePorts(1);
  if (port === undefined) return (await portIsFree(8080)) ? 8080 : free!;
  return port === 0 ? free! : port;
}

async function portIsFree(port: number): Promise<boolean> {
  const { createServer } = await import('node:net');
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ host: '0.0.0.0', port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/**
 * The service's database: DATABASE_URL when given; on the machine's own server a database of its own (rules_dev), so
 * development data never mixes with the test database; none (the service then uses embedded PGlite) when no server.
 */
async function devDatabase(stack: LocalStack): Promise<string | undefined> {
  if (stack.databaseUrl === undefined || stack.sources.postgres !== 'existing') return stack.databaseUrl;
  const url = new URL(stack.databaseUrl);
  const client = new pg.Client({ connectionString: stack.databaseUrl });
  await client.connect();
  try {
    const found = await client.query('select 1 from pg_database where datname = $1', ['rules_dev']);
    if (found.rowCount === 0) await client.query('create database rules_dev');
  } finally {
    await client.end();
  }
  url.pathname = '/rules_dev';
  return url.toString();
}

/** Polls GET /health until it answers 200, the service exits, or a minute passes. */
async function serviceAnswers(serviceUrl: string, service: SupervisedProcess): Promise<boolean> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline && !service.hasExited()) {
    const ok = await fetch(`${serviceUrl}/health`, { signal: AbortSignal.timeout(1_000) }).then(
      (response) => response.ok,
      () => false,
    );
    if (ok) return true;
    await sleep(250);
  }
  if (!service.hasExited()) say(`${serviceUrl}/health did not answer within a minute; see the service log above`);
  return false;
}

main().catch(async (error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  await removeEndpoints();
  await releaseDevRun();
  process.exit(1);
});
