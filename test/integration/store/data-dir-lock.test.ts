// One process per embedded data directory, checked against real processes and files.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LOCK_FILE, lockDataDir } from '../../../src/store/data-dir-lock.ts';

describe('lockDataDir', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  async function dataDir(): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'data-dir-lock-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    return dir;
  }

  async function otherProcess(): Promise<ChildProcess> {
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' });
    await once(child, 'spawn');
    cleanups.push(async () => {
      child.kill('SIGKILL');
    });
    return child;
  }

  it('takes a free directory and gives it back on release', async () => {
    const dir = await dataDir();
    const lock = await lockDataDir(dir);
    expect((await readFile(join(dir, LOCK_FILE), 'utf8')).trim()).toBe(String(process.pid));
    await lock.release();
    await expect(readFile(join(dir, LOCK_FILE), 'utf8')).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('refuses a directory another running process holds, naming it', async () => {
    const dir = await dataDir();
    const holder = await otherProcess();
    await writeFile(join(dir, LOCK_FILE), `${holder.pid}\n`);
    await expect(lockDataDir(dir)).rejects.toThrow(`is in use by process ${holder.pid}: only one process may open it`);
    expect((await readFile(join(dir, LOCK_FILE), 'utf8')).trim()).toBe(String(holder.pid));
  });

  it('takes over a lock its holder left behind when it died', async () => {
    const dir = await dataDir();
    const holder = await otherProcess();
    const pid = holder.pid;
    holder.kill('SIGKILL');
    await once(holder, 'exit');
    await writeFile(join(dir, LOCK_FILE), `${pid}\n`);
    const lock = await lockDataDir(dir);
    expect((await readFile(join(dir, LOCK_FILE), 'utf8')).trim()).toBe(String(process.pid));
    await lock.release();
  });

  it('takes over a stale lock beside a takeover file left by a process that died while taking over, or an earlier run under this pid', async () => {
    const holder = await otherProcess();
    holder.kill('SIGKILL');
    await once(holder, 'exit');
    for (const leftBy of [holder.pid, process.pid]) {
      const dir = await dataDir();
      await writeFile(join(dir, LOCK_FILE), `${holder.pid}\n`);
      await writeFile(join(dir, `${LOCK_FILE}.takeover`), `${leftBy}\n`);
      const lock = await lockDataDir(dir);
      expect((await readFile(join(dir, LOCK_FILE), 'utf8')).trim()).toBe(String(process.pid));
      expect(await readdir(dir)).toEqual([LOCK_FILE]);
      await lock.release();
    }
  });

  it('lets exactly one of several processes starting at the same instant take a directory, free or left stale', async () => {
    const base = await dataDir();
    const trials = 60;
    // A pid that is no process: half the directories hold a lock its holder left behind.
    const dead = await otherProcess();
    dead.kill('SIGKILL');
    await once(dead, 'exit');
    for (let trial = 0; trial < trials; trial++) {
      await mkdir(join(base, String(trial)));
      if (trial % 2 === 1) await writeFile(join(base, String(trial), LOCK_FILE), `${dead.pid}\n`);
    }
    const racer = new URL('../../fixtures/lock-racer.ts', import.meta.url).pathname;
    const startAt = Date.now() + 1_500;
    const racers = [0, 1, 2].map(() =>
      spawn(process.execPath, [racer, base, String(startAt), String(trials), '30'], { stdio: ['ignore', 'pipe', 'inherit'] }),
    );
    const outputs = await Promise.all(
      racers.map(async (child) => {
        let text = '';
        child.stdout!.on('data', (chunk: Buffer) => {
          text += chunk.toString('utf8');
        });
        const [code] = await once(child, 'exit');
        expect(code).toBe(0);
        return text
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as { trial: number; taken: boolean });
      }),
    );
    const takersPerTrial = Array.from(
      { length: trials },
      (_, trial) => outputs.filter((lines) => lines.find((line) => line.trial === trial)?.taken === true).length,
    );
    expect(takersPerTrial).toEqual(Array.from({ length: trials }, () => 1));
  });
});
