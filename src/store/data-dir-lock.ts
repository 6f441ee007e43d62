// One process per embedded data directory: PGlite takes no lock of its own, and a second process silently loses writes.
import { open, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';

export const LOCK_FILE = 'rules-service.lock';

export interface DataDirLock {
  release(): Promise<void>;
}

/**
 * Takes the data directory for this process (a lock file holding its pid), or fails naming the process that holds it.
 * A lock left by a process that is gone (killed, crashed, or an earlier run under the same pid) is taken over.
 */
export async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  const path = join(dataDir, LOCK_FILE);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const handle = await open(path, 'wx');
      try {
        await handle.writeFile(`${process.pid}\n`);
      } finally {
        await handle.close();
      }
      return { release: () => rm(path, { force: true }) };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = Number.parseInt(await readFile(path, 'utf8').catch(() => ''), 10);
      if (holder !== process.pid && isRunning(holder)) {
        throw new Error(
          `the data directory ${dataDir} is in use by process ${holder}: only one process may open it (give each instance its own RULES_DATA_DIR, or share a PostgreSQL through DATABASE_URL)`,
        );
      }
      await rm(path, { force: true });
    }
  }
  throw new Error(`the data directory ${dataDir} could not be locked: another process keeps taking it`);
}

function isRunning(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs under another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
