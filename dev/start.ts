// `npm run dev`: brings up the local stack, runs the service against it, prints how to talk to it; Ctrl-C stops all.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { printProcessWarnings } from '../src/logger.ts';
import { ENDPOINTS_FILE, removeEndpoints, writeEndpoints } from './endpoints-file.ts';
import { freePorts } from './local-stack/free-port.ts';
import { type LocalStack, startLocalStack } from './local-stack/index.ts';

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const say = (line: string) => void process.stderr.write(`local stack: ${line}\n`);

async function main(): Promise<void> {
  printProcessWarnings();
  const stack = await startLocalStack();
  let service: ChildProcess | undefined;
  let stopping = false;
  const shutdown = async (code: number) => {
    if (stopping) return;
    stopping = true;
    if (service !== undefined && service.exitCode === null && service.signalCode === null) {
      say('stopping the service');
      service.kill('SIGTERM');
      await Promise.race([new Promise((resolve) => service?.once('exit', resolve)), sleep(15_000, undefined, { ref: false })]);
      service.kill('SIGKILL');
    }
    say('stopping the stack');
    await stack.stop();
    await removeEndpoints();
    process.exit(code);
  };
  process.once('SIGINT', () => void shutdown(130));
  process.once('SIGTERM', () => void shutdown(143));

  const port = await servicePort(process.env.PORT);
  const databaseUrl = await devDatabase(stack);
  const factsTopic = process.env.KAFKA_FACTS_TOPIC ?? 'rules.facts';
  const resultsTopic = process.env.KAFKA_RESULTS_TOPIC ?? 'rules.results';
  const serviceUrl = `http://127.0.0.1:${port}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    KAFKA_BROKERS: stack.kafkaBrokers.join(','),
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
  say(`endpoints (also in ${ENDPOINTS_FILE}):\n${exported.map((name) => `    ${name}=${env[name]}`).join('\n')}`);

  if (!existsSync(MAIN)) {
    say(`${MAIN} does not exist yet: the stack stays up without the service (Ctrl-C to stop)`);
    setInterval(() => undefined, 60_000);
    return;
  }
  service = spawn(process.execPath, [MAIN], { env, stdio: 'inherit' });
  service.once('exit', (code, signal) => {
    if (stopping) return;
    say(`the service exited (${signal ?? `code ${code}`}); stopping the stack`);
    void shutdown(code ?? 1);
  });
  if (await serviceAnswers(serviceUrl, service)) say(instructions(serviceUrl, factsTopic, resultsTopic));
}

function instructions(serviceUrl: string, factsTopic: string, resultsTopic: string): string {
  const json = "-H 'content-type: application/json'";
  return [
    `the service answers on ${serviceUrl} (Ctrl-C stops the service and the stack)`,
    '  1. create a rule (on later runs it is there already: 409 CONFLICT, go on):',
    `     curl -s ${serviceUrl}/api/v1/rules ${json} -d '{"name":"large-amount","domain":"default","condition_dsl":{"type":"condition","field":"amount","op":">","value":100},"action":"review"}'`,
    '  2. evaluate a fact over HTTP:',
    `     curl -s ${serviceUrl}/api/v1/evaluate ${json} -d '{"facts":{"amount":150},"domain":"default"}'`,
    `  3. or send it through Kafka (${factsTopic}) and read the result (${resultsTopic}):`,
    `     node dev/produce.ts '{"facts":{"amount":150},"domain":"default"}'`,
    `     node dev/consume.ts ${resultsTopic}`,
  ].join('\n');
}

/** PORT when given; else 8080, or a free port when 8080 is taken (another engineer's service, say). */
async function servicePort(given: string | undefined): Promise<number> {
  if (given !== undefined && given.trim() !== '') return Number(given);
  const [free] = await freePorts(1);
  return (await portIsFree(8080)) ? 8080 : free!;
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
async function serviceAnswers(serviceUrl: string, service: ChildProcess): Promise<boolean> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline && service.exitCode === null) {
    const ok = await fetch(`${serviceUrl}/health`, { signal: AbortSignal.timeout(1_000) }).then(
      (response) => response.ok,
      () => false,
    );
    if (ok) return true;
    await sleep(250);
  }
  if (service.exitCode === null) say(`${serviceUrl}/health did not answer within a minute; see the service log above`);
  return false;
}

main().catch(async (error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  await removeEndpoints();
  process.exit(1);
});
