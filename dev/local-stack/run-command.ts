// Runs a short command to completion and, when it fails, says exactly what was run and what it printed.
import { spawn } from 'node:child_process';

export interface CommandResult {
  readonly code: number | null;
  readonly output: string;
}

export function runCommand(
  command: string,
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.once('error', (error: NodeJS.ErrnoException) => {
      const why = error.code === 'ENOENT' ? `${command} is not on PATH` : error.message;
      reject(new Error(`could not run \`${formatCommand(command, args)}\`: ${why}`));
    });
    child.once('close', (code) => resolve({ code, output: Buffer.concat(chunks).toString('utf8') }));
  });
}

/** Runs the command and throws `${what} failed` with the command line and the tail of its output unless it exits 0. */
export async function runOrThrow(
  what: string,
  command: string,
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<string> {
  const result = await runCommand(command, args, options);
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
