import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createRunDir,
  FAILED_KEPT_MS,
  keepFailedRunDir,
  removeAbandonedRunDirs,
  UNOWNED_GRACE_MS,
} from '../../../../dev/local-stack/run-dir.ts';

/** The pid of a process that has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', '0']);
  return child.pid!;
}

describe('run folders of the local stack', () => {
  let parent: string;
  beforeEach(async () => {
    parent = await mkdtemp(join(tmpdir(), 'run-dir-test-'));
  });
  afterEach(() => rm(parent, { recursive: true, force: true }));

  const folder = async (name: string, owner: number | undefined, options: { ageMs?: number; failedAgeMs?: number } = {}) => {
    const dir = join(parent, `rules-local-stack-${name}`);
    await mkdir(join(dir, 'kafka'), { recursive: true });
    if (owner !== undefined) await writeFile(join(dir, 'owner.pid'), String(owner));
    if (options.failedAgeMs !== undefined) {
      await keepFailedRunDir(dir);
      const at = new Date(Date.now() - options.failedAgeMs);
      await utimes(join(dir, 'failed'), at, at);
    }
    if (options.ageMs !== undefined) {
      const at = new Date(Date.now() - options.ageMs);
      await utimes(dir, at, at);
    }
    return dir;
  };

  it("removes the folders of runs whose process is gone, and keeps live runs', recent failures' and fresh unowned ones", async () => {
    const dead = deadPid();
    await folder('dead', dead);
    await folder('live', process.pid);
    await folder('failed-recently', dead, { failedAgeMs: 60_000 });
    await folder('failed-long-ago', dead, { failedAgeMs: FAILED_KEPT_MS + 60_000 });
    await folder('unowned-fresh', undefined);
    await folder('unowned-old', undefined, { ageMs: UNOWNED_GRACE_MS + 60_000 });
    await mkdir(join(parent, 'something-else'));
    const removed = await removeAbandonedRunDirs(parent);
    expect(removed.sort()).toEqual(['rules-local-stack-dead', 'rules-local-stack-failed-long-ago', 'rules-local-stack-unowned-old']);
    expect((await readdir(parent)).sort()).toEqual([
      'rules-local-stack-failed-recently',
      'rules-local-stack-live',
      'rules-local-stack-unowned-fresh',
      'something-else',
    ]);
  });

  it('creates a folder owned by this process after clearing abandoned ones', async () => {
    await folder('dead', deadPid());
    const dir = await createRunDir(parent);
    expect((await readdir(parent)).map((name) => join(parent, name))).toEqual([dir]);
    expect(await readdir(dir)).toEqual(['owner.pid']);
    // The new folder is a live run's: the next run leaves it alone.
    expect(await removeAbandonedRunDirs(parent)).toEqual([]);
  });
});
