// The folder a run of the stack keeps its processes' data and logs in. A run killed before it could stop (SIGKILL,
// Ctrl-C during start-up) leaves its folder behind, Kafka's data and all: the next run removes those.
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { processExists } from './process-exists.ts';

const PREFIX = 'rules-local-stack-';
const OWNER_FILE = 'owner.pid';
const FAILED_FILE = 'failed';
/** A folder kept after a failed start stays this long: its logs explain the failure. */
export const FAILED_KEPT_MS = 24 * 3_600_000;
/** A folder without an owner file: one another run is creating right now, or one of a run of an earlier version. */
export const UNOWNED_GRACE_MS = 7 * 24 * 3_600_000;

/** A new run folder under `parent`, after removing the ones abandoned there; it names this process as its owner. */
export async function createRunDir(parent: string = tmpdir()): Promise<string> {
  await removeAbandonedRunDirs(parent);
  const dir = await mkdtemp(join(parent, PREFIX));
  await writeFile(join(dir, OWNER_FILE), String(process.pid));
  return dir;
}

/** Keeps the folder of a start that failed for a day instead of letting the next run remove it. */
export async function keepFailedRunDir(dir: string): Promise<void> {
  await writeFile(join(dir, FAILED_FILE), '');
}

/** Removes the run folders under `parent` whose owner process is gone; the names of those removed. */
export async function removeAbandonedRunDirs(parent: string = tmpdir(), now = Date.now()): Promise<string[]> {
  const removed: string[] = [];
  for (const name of await readdir(parent).catch(() => [])) {
    if (!name.startsWith(PREFIX)) continue;
    const dir = join(parent, name);
    if (!(await abandoned(dir, now))) continue;
    // Another user's folder, or one a concurrent run removes first: not ours to worry about.
    const gone = await rm(dir, { recursive: true, force: true }).then(
      () => true,
      () => false,
    );
    if (gone) removed.push(name);
  }
  return removed;
}

async function abandoned(dir: string, now: number): Promise<boolean> {
  const info = await stat(dir).catch(() => undefined);
  if (info === undefined || !info.isDirectory()) return false;
  const age = now - info.mtimeMs;
  const owner = Number(await readFile(join(dir, OWNER_FILE), 'utf8').catch(() => ''));
  if (!Number.isSafeInteger(owner) || owner <= 0) return age > UNOWNED_GRACE_MS;
  if (processExists(owner)) return false;
  const failed = await stat(join(dir, FAILED_FILE)).catch(() => undefined);
  return failed === undefined || now - failed.mtimeMs > FAILED_KEPT_MS;
}
