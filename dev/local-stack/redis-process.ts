// Redis: the server already listening on 127.0.0.1:6379 when it answers PING, else a private redis-server on a free port.
import { constants } from 'node:fs';
import { access, mkdir, readFile } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { freePorts } from './free-port.ts';
import { redisAnswers } from './probes.ts';
import { tail } from './run-command.ts';
import { startSupervised } from './supervised-process.ts';
import type { ProvidedService, StartContext } from './types.ts';
import { describeError, waitUntil } from './wait-until.ts';

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

export async function startRedis(context: StartContext, env: Readonly<Record<string, string | undefined>>): Promise<ProvidedService> {
  const existing = await redisAnswers(DEFAULT_REDIS_URL, 500).catch((error: unknown) => error);
  // A shared server is fine because every test works under its own random key prefix.
  if (existing === true) return { endpoint: DEFAULT_REDIS_URL, source: 'existing', note: 'already running', stop: async () => undefined };

  const binary = await whichBinary('redis-server', env);
  if (binary === undefined) {
    throw new Error(
      `Redis: nothing answers PING on ${DEFAULT_REDIS_URL} (${describeError(existing)}) and \`redis-server\` is not on PATH; ` +
        'install it (apt-get install redis-server) or set REDIS_URL.',
    );
  }
  const dir = join(context.runDir, 'redis');
  await mkdir(dir, { recursive: true });
  const [port] = await freePorts(1);
  const logFile = join(dir, 'redis.log');
  const server = startSupervised(
    binary,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
    {
      cwd: dir,
      logFile,
    },
  );
  const endpoint = `redis://127.0.0.1:${port}`;
  const ready = await waitUntil(() => redisAnswers(endpoint, 500), {
    timeoutMs: context.readyTimeoutMs,
    exited: server.exited,
    intervalMs: 50,
  });
  if (!ready.ok) {
    await server.stop(5_000);
    const log = await readFile(logFile, 'utf8').catch(() => '');
    throw new Error(
      `redis-server on port ${port} did not answer PING (${ready.reason}): ${describeError(ready.lastError)}\nLog: ${logFile}\n${tail(log, 20)}`,
    );
  }
  return { endpoint, source: 'process', note: binary, stop: async () => void (await server.stop(5_000)) };
}

async function whichBinary(name: string, env: Readonly<Record<string, string | undefined>>): Promise<string | undefined> {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, name);
    if (
      await access(candidate, constants.X_OK).then(
        () => true,
        () => false,
      )
    )
      return candidate;
  }
  return undefined;
}
