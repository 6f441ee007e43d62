// Starts a long-running child (Kafka, Apicurio, redis-server) in its own process group and guarantees it dies with us.
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

// The wrapper forwards TERM/INT/HUP to the command and stops it when its stdin closes, i.e. when this process dies
// without running any handler (SIGKILL). The trap is in place before the command starts, so a signal that arrives
// while the wrapper is still setting up is remembered and forwarded instead of killing the wrapper. A trapped signal
// interrupts `wait`, hence the loop; the last `wait` returns the status the shell remembered, so the wrapper exits with
// the command's own status.
const WRAPPER = `child=
stopping=
trap 'stopping=1; [ -z "$child" ] || kill -TERM "$child" 2>/dev/null' TERM INT HUP
exec 3<&0
"$@" 3<&- &
child=$!
[ -z "$stopping" ] || kill -TERM "$child" 2>/dev/null
( cat <&3 >/dev/null 2>&1; kill -TERM "$child" 2>/dev/null ) &
exec 3<&-
while kill -0 "$child" 2>/dev/null; do wait "$child"; done
wait "$child"`;

export interface SupervisedProcess {
  readonly pid: number;
  /** Resolves with the command's exit status (143 after SIGTERM for a JVM), or null when killed by a signal. */
  readonly exited: Promise<number | null>;
  readonly hasExited: () => boolean;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves with the exit status. */
  stop(graceMs?: number): Promise<number | null>;
}

export interface SuperviseOptions {
  readonly cwd: string;
  readonly env?: NodeJS.ProcessEnv;
  /** stdout and stderr of the command are appended here; shared with this process when absent. */
  readonly logFile?: string;
}

const running = new Set<SupervisedProcess>();
let hooksInstalled = false;

export function startSupervised(command: string, args: readonly string[], options: SuperviseOptions): SupervisedProcess {
  installHooks();
  const out = options.logFile === undefined ? 'inherit' : openSync(options.logFile, 'a');
  const child = spawn('/bin/sh', ['-c', WRAPPER, 'local-stack', command, ...args], {
    cwd: options.cwd,
    env: options.env ?? process.env,
    detached: true,
    stdio: ['pipe', out, out],
  });
  if (out !== 'inherit') closeSync(out);
  const pid = child.pid;
  if (pid === undefined) throw new Error(`could not start ${command}: spawn returned no pid`);
  let done = false;
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => {
      done = true;
      running.delete(handle);
      // Leftovers of the wrapper (its stdin watcher) share the group; the command itself is gone already.
      signalGroup(pid, 'SIGKILL');
      resolve(code);
    });
  });
  child.once('error', () => undefined);
  child.unref();
  // The pipe only exists to tell the wrapper we died; it must not keep this process alive.
  const stdin = child.stdin as (NodeJS.WritableStream & { unref?: () => void }) | null;
  stdin?.unref?.();
  const handle: SupervisedProcess = {
    pid,
    exited,
    hasExited: () => done,
    async stop(graceMs = 20_000) {
      if (done) return exited;
      // Waiting for the exit must keep this process alive, unlike the child's normal life.
      child.ref();
      signalGroup(pid, 'SIGTERM');
      const code = await Promise.race([exited, sleep(graceMs, 'timeout' as const, { ref: false })]);
      if (code !== 'timeout') return code;
      signalGroup(pid, 'SIGKILL');
      return exited;
    },
  };
  running.add(handle);
  return handle;
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the group is gone already.
  }
}

function installHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  // 'exit' handlers cannot wait: the children get SIGTERM and shut themselves down (a JVM runs its hooks).
  process.on('exit', () => {
    for (const handle of running) signalGroup(handle.pid, 'SIGTERM');
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      // Someone else handles the signal (npm run dev stops the service first, then the stack): leave the order to it;
      // the 'exit' hook still stops whatever is left.
      if (process.listenerCount(signal) > 0) return;
      for (const handle of running) signalGroup(handle.pid, 'SIGTERM');
      // Nobody else handles the signal: take the default action (exit) as if we had never listened.
      process.kill(process.pid, signal);
    });
  }
}
