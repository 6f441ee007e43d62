import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ensureInstalled, isInstalled } from '../../../../dev/local-stack/artifact-cache.ts';
import { CACHE_SUBDIR, cacheDir } from '../../../../dev/local-stack/cache-dir.ts';
import { classDataArchive } from '../../../../dev/local-stack/class-data-archive.ts';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'local-stack-unit-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('cacheDir', () => {
  it('lives under XDG_CACHE_HOME when set, else under ~/.cache', () => {
    expect(cacheDir({ XDG_CACHE_HOME: '/var/cache/me' })).toBe(`/var/cache/me/${CACHE_SUBDIR}`);
    expect(cacheDir({ XDG_CACHE_HOME: ' ' })).toMatch(new RegExp(`/\\.cache/${CACHE_SUBDIR}$`));
    expect(cacheDir({})).toMatch(new RegExp(`/\\.cache/${CACHE_SUBDIR}$`));
  });
});

describe('ensureInstalled', () => {
  it('installs once and reports the cached copy afterwards without running the installer again', async () => {
    const dir = join(root, 'kafka-3.9.2');
    let runs = 0;
    const install = async (staging: string) => {
      runs++;
      await writeFile(join(staging, 'kafka.jar'), 'jar');
    };
    expect(await ensureInstalled(dir, install)).toBe('downloaded');
    expect(await ensureInstalled(dir, install)).toBe('cached');
    expect(runs).toBe(1);
    expect(await readFile(join(dir, 'kafka.jar'), 'utf8')).toBe('jar');
  });

  it('leaves nothing behind when the installer fails, and passes its error on', async () => {
    const dir = join(root, 'apicurio');
    await expect(
      ensureInstalled(dir, async (staging) => {
        await writeFile(join(staging, 'half.tar.gz'), 'partial');
        throw new Error('Maven download failed (exit 1)');
      }),
    ).rejects.toThrow('Maven download failed (exit 1)');
    expect(await isInstalled(dir)).toBe(false);
    expect(await readdir(root)).toEqual([]);
  });

  it('removes the staging folder of a run that was killed, keeping those of runs still going', async () => {
    const dir = join(root, 'kafka-3.9.2');
    const dead = await deadPid();
    await mkdir(join(root, `kafka-3.9.2.staging-${dead}-0a1b2c3d`));
    await mkdir(join(root, `kafka-3.9.2.staging-${process.pid}-0a1b2c3d`));
    expect(await ensureInstalled(dir, async (staging) => writeFile(join(staging, 'kafka.jar'), 'jar'))).toBe('downloaded');
    expect((await readdir(root)).sort()).toEqual(['kafka-3.9.2', `kafka-3.9.2.staging-${process.pid}-0a1b2c3d`]);
  });

  it('lets two cold starts install at the same time and keeps one complete copy', async () => {
    const dir = join(root, 'kafka');
    const install = async (staging: string) => writeFile(join(staging, 'kafka.jar'), 'jar');
    const outcomes = await Promise.all([ensureInstalled(dir, install), ensureInstalled(dir, install)]);
    expect(outcomes).toEqual(['downloaded', 'downloaded']);
    expect(await isInstalled(dir)).toBe(true);
    expect((await readdir(root)).sort()).toEqual(['kafka']);
  });
});

describe('classDataArchive', () => {
  const java = { bin: '/usr/bin/java', major: 17, version: '17.0.15' };

  it('records a new archive under a private name and keeps it only after a clean JVM exit', async () => {
    const first = await classDataArchive(root, 'kafka-3.9.2', java);
    expect(first.reused).toBe(false);
    const pending = first.flags[0]!.replace('-XX:ArchiveClassesAtExit=', '');
    expect(pending).toMatch(/kafka-3\.9\.2-java-17\.0\.15\.jsa\.\d+-[0-9a-f]{8}\.tmp$/);
    await writeFile(pending, 'archive');
    await first.settle(143);

    const second = await classDataArchive(root, 'kafka-3.9.2', java);
    expect(second.reused).toBe(true);
    expect(second.flags).toEqual([`-XX:SharedArchiveFile=${join(root, 'class-data', 'kafka-3.9.2-java-17.0.15.jsa')}`, '-Xshare:auto']);
  });

  it('discards an archive written by a JVM that was killed', async () => {
    const first = await classDataArchive(root, 'registry', java);
    const pending = first.flags[0]!.replace('-XX:ArchiveClassesAtExit=', '');
    await writeFile(pending, 'partial');
    await first.settle(null);
    expect(await readdir(join(root, 'class-data'))).toEqual([]);
    expect((await classDataArchive(root, 'registry', java)).reused).toBe(false);
  });

  it('deletes a reused archive a JVM could not start with, so the next run records a new one', async () => {
    const first = await classDataArchive(root, 'kafka', java);
    await writeFile(first.flags[0]!.replace('-XX:ArchiveClassesAtExit=', ''), 'archive');
    await first.settle(0);
    const reused = await classDataArchive(root, 'kafka', java);
    expect(reused.reused).toBe(true);
    await reused.discard();
    expect((await classDataArchive(root, 'kafka', java)).reused).toBe(false);
  });

  it('removes archives that killed runs were recording, keeping those of runs still going', async () => {
    const dead = await deadPid();
    await mkdir(join(root, 'class-data'));
    const name = 'kafka-java-17.0.15.jsa';
    await writeFile(join(root, 'class-data', `${name}.${dead}-0a1b2c3d.tmp`), 'partial');
    await writeFile(join(root, 'class-data', `${name}.${process.pid}-0a1b2c3d.tmp`), 'recording');
    expect((await classDataArchive(root, 'kafka', java)).reused).toBe(false);
    expect((await readdir(join(root, 'class-data'))).sort()).toEqual([`${name}.${process.pid}-0a1b2c3d.tmp`]);
  });

  it('is never shared between JVM versions', async () => {
    const first = await classDataArchive(root, 'kafka', java);
    await writeFile(first.flags[0]!.replace('-XX:ArchiveClassesAtExit=', ''), 'archive');
    await first.settle(0);
    expect((await classDataArchive(root, 'kafka', { ...java, version: '17.0.16' })).reused).toBe(false);
  });
});

/** A pid no process has now: that of a child that has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  const [code] = await once(child, 'exit');
  expect(code).toBe(0);
  return child.pid!;
}
