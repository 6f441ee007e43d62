// Runs a short command to completion and, when it fails, says exactly what was run and what it printed.
import { spawn } from 'node:child_process';

export interface CommandResult {
  readonly code: number | null;
  readonly output: string;
  /** Stopped (SIGKILL) because it ran past its time limit. */
  readonly timedOut?: boolean;
}

export interface CommandOptions {
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** Longest the command may run before it is killed: a download that stalls or a JVM that hangs must not wait for good. */
  readonly timeoutMs?: number;
}

export function runCommand(command: string, args: readonly string[], options: CommandOptions = {}): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let timedOut = false;
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            child.kill('SIGKILL');
          }, options.timeoutMs);
    const chunks: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.once('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      const why = error.code === 'ENOENT' ? `${command} is not on PATH` : error.message;
      reject(new Error(`could not run \`${formatCommand(command, args)}\`: ${why}`));
    });
    const finish = (code: number | null) => {
      clearTimeout(timer);
      resolve({ code, output: Buffer.concat(chunks).toString('utf8'), ...(timedOut ? { timedOut } : {}) });
    };
    // Killed for its time: a grandchild may still hold the output open, so its exit is the end.
    child.once('exit', (code) => {
      if (!timedOut) return;
      child.stdout.destroy();
      child.stderr.destroy();
      finish(code);
    });
    child.once('close', finish);
  });
}

/** Runs the command and throws `${what} failed` with the command line and the tail of its output unless it exits 0. */
export async function runOrThrow(what: string, command: string, args: readonly string[], options: CommandOptions = {}): Promise<string> {
  const result = await runCommand(command, args, options);
  if (result.timedOut === true) {
    throw new Error(
      `${what} did not finish within ${options.timeoutMs} ms and was stopped: \`${formatCommand(command, args)}\`\n${tail(result.output, 60)}`,
    );
  }
  if (result.code !== 0) {
    throw new Error(`${what} failed (exit ${result.code}): \`${formatCommand(command, args)}\`\n${tail(result.output, 60)}`);
  }
  return result.output;
}

export function formatCommand(command: string, args: readonly string[]): string {
  return [command, ...args].map((part) => (/^[\w@%+=:,./-]+$/.test(part) ? part : `'${part.replaceAll("'", "'\\''")}'`)).join(' ');
}

/** The last `lines` lines of a text, for error messages that point at a log. */
export function tail(text: string, lines: number): string {
  const all = text.trimEnd().split('\n');
  return all.slice(-lines).join('\n');
}
