// The endpoints of the stack `npm run dev` started, in .local-stack/endpoints.json, so the helper scripts can find them.
import { readFileSync } from 'node:fs';
import { link, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { processExists } from './local-stack/process-exists.ts';
import { endpointsFromEnv } from './local-stack/stack-environment.ts';

export const ENDPOINTS_FILE = fileURLToPath(new URL('../.local-stack/endpoints.json', import.meta.url));
/** Holds the pid of the `npm run dev` that runs in this checkout, from before its stack starts until it stops. */
export const RUN_LOCK_FILE = fileURLToPath(new URL('../.local-stack/run.lock', import.meta.url));

const endpointsSchema = z.object({
  /** The `npm run dev` process that wrote the file: a file whose writer is gone is stale. */
  pid: z.number().int().optional(),
  kafkaBrokers: z.array(z.string()),
  schemaRegistryUrl: z.string().optional(),
  redisUrl: z.string().optional(),
  databaseUrl: z.string().optional(),
  serviceUrl: z.string(),
  factsTopic: z.string(),
  resultsTopic: z.string(),
});
export type DevEndpoints = z.infer<typeof endpointsSchema>;

/** Writes this run's endpoints, stamped with this process's pid. */
export async function writeEndpoints(endpoints: Omit<DevEndpoints, 'pid'>, file = ENDPOINTS_FILE): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, `${JSON.stringify({ pid: process.pid, ...endpoints }, null, 2)}\n`);
}

/** Removes the file if this process wrote it: another run's file stays. */
export async function removeEndpoints(file = ENDPOINTS_FILE): Promise<void> {
  const text = await readFile(file, 'utf8').catch(() => undefined);
  if (text === undefined) return;
  const written = endpointsSchema.safeParse(parseOrUndefined(text));
  if (written.success && written.data.pid !== undefined && written.data.pid !== process.pid) return;
  await rm(file, { force: true });
}

/** The running dev stack's endpoints, or undefined when `npm run dev` is not running (no file, or its writer is gone). */
export async function readEndpoints(file = ENDPOINTS_FILE): Promise<DevEndpoints | undefined> {
  const text = await readFile(file, 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  const parsed = endpointsSchema.safeParse(parseOrUndefined(text));
  if (!parsed.success) throw new Error(`${file} is not what \`npm run dev\` writes; delete it and start again`);
  // Our own pid in the file is a reused one: the run that wrote it is gone (a container restarted, say).
  if (parsed.data.pid !== undefined && (parsed.data.pid === process.pid || !isRunning(parsed.data.pid))) return undefined;
  return parsed.data;
}

function parseOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Whether a `npm run dev` process has this pid: a pid reused by another program does not count (read where /proc is). */
function isRunning(pid: number): boolean {
  if (!processExists(pid)) return false;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(DEV_SCRIPT);
  } catch {
    return true;
  }
}

/** What `npm run dev` runs, as it appears in its process's command line. */
const DEV_SCRIPT = 'start.ts';

/** Brokers from KAFKA_BROKERS, else from the running dev stack; a clear error when there are none. */
export async function devBrokers(env: Readonly<Record<string, string | undefined>>): Promise<string[]> {
  // Checked as the stack checks it: a malformed value fails at once, not after kafkajs's retries.
  const given = endpointsFromEnv(env, ['kafka']).kafka;
  if (given !== undefined) return given.split(',');
  const endpoints = await readEndpoints();
  if (endpoints === undefined || endpoints.kafkaBrokers.length === 0) {
    throw new Error('no Kafka brokers: start the stack with `npm run dev` (in another terminal) or set KAFKA_BROKERS=host:port');
  }
  return endpoints.kafkaBrokers;
}

/**
 * Claims this checkout for one `npm run dev`. The lock appears whole (linked from a file already holding our pid), so a
 * reader never sees it empty; a lock whose run is gone is replaced by one run only (under a takeover marker). Throws,
 * naming the pid, while another run holds it.
 */
export async function claimDevRun(file = RUN_LOCK_FILE): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const mine = `${file}.${process.pid}`;
  await writeFile(mine, `${process.pid}\n`);
  try {
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        await link(mine, file);
        return;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const holder = await pidIn(file);
      if (holder !== undefined && holder !== process.pid && isRunning(holder)) {
        throw new Error(`npm run dev already runs in this checkout (pid ${holder}); stop it first`);
      }
      await replaceStale(file, holder, mine);
    }
    throw new Error(`${file} keeps changing: another npm run dev is starting in this checkout; try again`);
  } finally {
    await rm(mine, { force: true });
  }
}

/** Removes a stale lock still held by `holder`, unless another run is replacing it (its takeover marker is live). */
async function replaceStale(file: string, holder: number | undefined, mine: string): Promise<void> {
  const marker = `${file}.takeover`;
  try {
    await link(mine, marker);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    const other = await pidIn(marker);
    // A marker left by a run that died mid-takeover is cleared; a live one means waiting for that run.
    if (other === undefined || !isRunning(other)) await rm(marker, { force: true });
    else await new Promise((resolve) => setTimeout(resolve, 50));
    return;
  }
  try {
    if ((await pidIn(file)) === holder) await rm(file, { force: true });
  } finally {
    await rm(marker, { force: true });
  }
}

async function pidIn(file: string): Promise<number | undefined> {
  const pid = Number((await readFile(file, 'utf8').catch(() => '')).trim());
  return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
}

/** Gives the checkout up, if this run holds it. */
export async function releaseDevRun(file = RUN_LOCK_FILE): Promise<void> {
  if ((await pidIn(file)) === process.pid) await rm(file, { force: true });
}
