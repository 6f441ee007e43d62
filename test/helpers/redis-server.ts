// A private redis-server process for tests that stop, kill or restart Redis without touching the shared one.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';

/** Starts redis-server on 127.0.0.1:port with no RDB snapshots plus the given options; resolves once it accepts connections. */
export async function startRedisServer(port: number, options: readonly string[] = []): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', ...options], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    child.on('exit', (code) => reject(new Error(`redis-server exited with ${code}: ${output}`)));
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Ready to accept connections')) resolve();
    });
  });
  child.removeAllListeners('exit');
  return child;
}

/** Kills the server at once (a crash, not a shutdown); nothing to do when it is gone already. */
export async function killRedisServer(child: ChildProcess | undefined): Promise<void> {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGKILL');
  await once(child, 'exit');
}
