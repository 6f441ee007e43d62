// One process per embedded data directory: PGlite takes no lock of its own, and a second process silently loses writes.
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { copyFile, link, open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export const LOCK_FILE = 'rules-service.lock';

export interface DataDirLock {
  release(): Promise<void>;
}

/**
 * How long to keep trying while other processes take and leave the lock (each try takes milliseconds), longer than a
 * takeover file may stand before it counts as left behind.
 */
const TAKE_MS = 10_000;

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

/** A takeover lasts milliseconds: a takeover file older than this was left behind, whatever process now has its pid. */
const TAKEOVER_LEFT_MS = 5_000;

/**
 * Removes the stale lock as it was read, holding the takeover lock while it checks and removes: a check and a removal
 * by two processes in turn would delete a lock the other had just taken.
 */
async function removeStale(mine: string, path: string, stale: LockFile): Promise<void> {
  const takeover = `${path}.takeover`;
  if (!(await placed(mine, takeover))) {
    const other = await readLock(takeover);
    // Left by a process that died while taking over (or an earlier run under this pid); else another is at it, briefly.
    const left =
      other !== undefined && (other.pid === process.pid || !isRunning(other.pid) || Date.now() - other.linkedMs > TAKEOVER_LEFT_MS);
    if (left) await removeIfSame(takeover, other);
    else await sleep(5);
    return;
  }
  try {
    // Under the takeover lock nobody else removes the lock file, and nobody can put one where it stands.
    const now = await readLock(path);
    if (now !== undefined && now.inode === stale.inode && Object.is(now.pid, stale.pid)) await rm(path, { force: true });
  } finally {
    await rm(takeover, { force: true });
  }
}

/**
 * Removes a takeover file left behind if it is still the one read (same file, same pid). It is moved aside first, so one
 * another process has put there meanwhile is recognised and put back instead of deleted.
 */
async function removeIfSame(path: string, read: LockFile): Promise<void> {
  const aside = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.old`;
  try {
    await rename(path, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  try {
    const moved = await readLock(aside);
    if (moved !== undefined && (moved.inode !== read.inode || !Object.is(moved.pid, read.pid)))
      await link(aside, path).catch(() => undefined);
  } finally {
    await rm(aside, { force: true });
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

/** A lock file as read: its pid (NaN when unreadable), which file it was, and when it was put in place. */
interface LockFile {
  readonly pid: number;
  readonly inode: number;
  /** The file's change time, which a link sets: a lock written long before its process could place it is still new. */
  readonly linkedMs: number;
}

/** The lock file at `path`; undefined when there is none any more. */
async function readLock(path: string): Promise<LockFile | undefined> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    const [text, stats] = await Promise.all([handle.readFile('utf8'), handle.stat()]);
    return { pid: Number.parseInt(text, 10), inode: stats.ino, linkedMs: stats.ctimeMs };
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
