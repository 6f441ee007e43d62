// The service as a child process (`node src/main.ts`), for tests that kill it, stop it, or run two of it.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { eventually, freePort } from './support.ts';

const MAIN = fileURLToPath(new URL('../../../src/main.ts', import.meta.url));

export interface ServiceProcess {
  readonly port: number;
  readonly url: string;
  /** Everything the process wrote so far (stdout and stderr), for failure messages. */
  output(): string;
  /** Resolves once /health/ready answers 200; rejects when the process exits first or the guard time runs out. */
  ready(guardMs?: number): Promise<void>;
  signal(signal: NodeJS.Signals): void;
  /** Resolves with the exit code (null when killed by a signal). */
  exited(): Promise<number | null>;
}

export async function startServiceProcess(env: Record<string, string>): Promise<ServiceProcess> {
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, [MAIN], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      PORT: String(port),
      HOST: '127.0.0.1',
      RULES_LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  let exitCode: number | null | undefined;
  const exit = once(child, 'exit').then(([code]) => {
    exitCode = code as number | null;
    return exitCode;
  });
  const url = `http://127.0.0.1:${port}`;
  return {
    port,
    url,
    output: () => output,
    async ready(guardMs = 150_000) {
      const ok = await eventually(
        async () => {
          if (exitCode !== undefined) return true;
          try {
            return (await fetch(`${url}/health/ready`)).status === 200;
          } catch {
            return false;
          }
        },
        guardMs,
        100,
      );
      if (exitCode !== undefined) throw new Error(`the service exited with ${exitCode} before it was ready:\n${output}`);
      if (!ok) throw new Error(`the service was not ready in time:\n${output}`);
    },
    signal(signal) {
      if (exitCode === undefined) child.kill(signal);
    },
    exited: () => exit,
  };
}
