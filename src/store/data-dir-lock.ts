// One process per embedded data directory: PGlite takes no lock of its own, and a second process silently loses writes.
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { copyFile, link, open, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export const LOCK_FILE = 'rules-service.lock';

export interface DataDirLock {
  release(): Promise<void>;
}

/** How long to keep trying while other processes take and leave the lock (each try takes milliseconds). */
const TAKE_MS = 2_000;

/**
 * Takes the data directory for this process (a lock file holding its pid), or fails naming the process that holds it.
 * A lock left by a process that is gone (killed, crashed, or an earlier run under the same pid) is taken over. The lock
 * appears whole (written aside, then linked into place), and a stale one is removed only under a second lock file,
 * after checking it is still the very file found stale, so processes starting at once never both hold it.
 */
export async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  const path = join(dataDir, LOCK_FILE);
  const mine = `${path}.${process.pid}.${randomBytes(6).toString('hex')}`;
  await writeFile(mine, `${process.pid}\n`, { flag: 'wx' });
  try {
    const deadline = Date.now() + TAKE_MS;
    while (!(await placed(mine, path))) {
      const found = await readLock(path);
      if (found !== undefined) {
        if (found.pid !== process.pid && isRunning(found.pid)) {
          throw new Error(
            `the data directory ${dataDir} is in use by process ${found.pid}: only one process may open it (give each instance its own RULES_DATA_DIR, or share a PostgreSQL through DATABASE_URL)`,
          );
        }
        await removeStale(mine, path, found);
      }
      if (Date.now() > deadline) throw new Error(`the data directory ${dataDir} could not be locked: another process keeps taking it`);
    }
    return { release: () => releaseIfMine(path) };
  } finally {
    await rm(mine, { force: true });
  }
}

/**
 * Removes the stale lock as it was read (same file, same pid: a new lock may reuse a freed inode), holding the takeover
 * lock while it checks and removes: a check and a removal by two processes in turn would delete a lock the other had
 * just taken.
 */
async function removeStale(mine: string, path: string, stale: { pid: number; inode: number }): Promise<void> {
  const takeover = `${path}.takeover`;
  if (!(await placed(mine, takeover))) {
    const other = await readLock(takeover);
    // Left by a process that died while taking over; otherwise another process is at it, for a moment.
    if (other !== undefined && other.pid !== process.pid && !isRunning(other.pid)) await rm(takeover, { force: true });
    else await sleep(5);
    return;
  }
  try {
    const now = await readLock(path);
    if (now !== undefined && now.inode === stale.inode && Object.is(now.pid, stale.pid)) await rm(path, { force: true });
  } finally {
    await rm(takeover, { force: true });
  }
}

/** Puts the written lock at `path`: false when a lock is there already. */
async function placed(written: string, path: string): Promise<boolean> {
  try {
    await place(written, path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

/** Links the written lock into place; fails with EEXIST when there is one already. */
async function place(written: string, path: string): Promise<void> {
  try {
    await link(written, path);
  } catch (error) {
    // A file system without hard links (some network shares): a copy that refuses to overwrite, briefly empty.
    if (!['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS'].includes((error as NodeJS.ErrnoException).code ?? '')) throw error;
    await copyFile(written, path, constants.COPYFILE_EXCL);
  }
}

/** The lock's pid (NaN when unreadable) and the file it was read from; undefined when there is no lock any more. */
async function readLock(path: string): Promise<{ pid: number; inode: number } | undefined> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    const [text, stats] = await Promise.all([handle.readFile('utf8'), handle.stat()]);
    return { pid: Number.parseInt(text, 10), inode: stats.ino };
  } finally {
    await handle.close();
  }
}

/** Removes the lock if it is still this process's (a lock taken over from it stays). */
async function releaseIfMine(path: string): Promise<void> {
  const text = await readFile(path, 'utf8').catch(() => '');
  if (Number.parseInt(text, 10) === process.pid) await rm(path, { force: true });
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
