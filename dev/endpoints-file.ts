// The endpoints of the stack `npm run dev` started, in .local-stack/endpoints.json, so the helper scripts can find them.
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

export const ENDPOINTS_FILE = fileURLToPath(new URL('../.local-stack/endpoints.json', import.meta.url));

const endpointsSchema = z.object({
  kafkaBrokers: z.array(z.string()),
  schemaRegistryUrl: z.string().optional(),
  redisUrl: z.string().optional(),
  databaseUrl: z.string().optional(),
  serviceUrl: z.string(),
  factsTopic: z.string(),
  resultsTopic: z.string(),
});
export type DevEndpoints = z.infer<typeof endpointsSchema>;

export async function writeEndpoints(endpoints: DevEndpoints): Promise<void> {
  await mkdir(dirname(ENDPOINTS_FILE), { recursive: true });
  await writeFile(ENDPOINTS_FILE, `${JSON.stringify(endpoints, null, 2)}\n`);
}

export async function removeEndpoints(): Promise<void> {
  await rm(ENDPOINTS_FILE, { force: true });
}

/** The running dev stack's endpoints, or undefined when `npm run dev` is not running (no file). */
export async function readEndpoints(): Promise<DevEndpoints | undefined> {
  const text = await readFile(ENDPOINTS_FILE, 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  const parsed = endpointsSchema.safeParse(JSON.parse(text));
  if (!parsed.success) throw new Error(`${ENDPOINTS_FILE} is not what \`npm run dev\` writes; delete it and start again`);
  return parsed.data;
}

/** Brokers from KAFKA_BROKERS, else from the running dev stack; a clear error when there are none. */
export async function devBrokers(env: Readonly<Record<string, string | undefined>>): Promise<string[]> {
  const given = env.KAFKA_BROKERS?.trim();
  if (given) return given.split(',').map((broker) => broker.trim());
  const endpoints = await readEndpoints();
  if (endpoints === undefined || endpoints.kafkaBrokers.length === 0) {
    throw new Error('no Kafka brokers: start the stack with `npm run dev` (in another terminal) or set KAFKA_BROKERS=host:port');
  }
  return endpoints.kafkaBrokers;
}
