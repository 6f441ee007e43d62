import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { claimDevRun, readEndpoints, releaseDevRun, removeEndpoints, writeEndpoints } from '../../../dev/endpoints-file.ts';

const endpoints = {
  kafkaBrokers: ['127.0.0.1:9092'],
  serviceUrl: 'http://127.0.0.1:8080',
  factsTopic: 'rules.facts',
  resultsTopic: 'rules.results',
};
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});
async function tempFile(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'dev-endpoints-'));
  dirs.push(dir);
  return join(dir, 'endpoints.json');
}
/** The pid of a process that has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

describe('the dev endpoints file', () => {
  it('is written stamped with the pid of the run, and read back while that run lives', async () => {
    const file = await tempFile();
    await writeEndpoints(endpoints, file);
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({ pid: process.pid, ...endpoints });
    // A stand-in for a running `npm run dev` (its command line names dev/start.ts).
    const run = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)', 'dev/start.ts'], { stdio: 'ignore' });
    try {
      await writeFile(file, JSON.stringify({ pid: run.pid, ...endpoints }));
      expect(await readEndpoints(file)).toEqual({ pid: run.pid, ...endpoints });
    } finally {
      run.kill();
    }
  });

  it('counts as absent when its pid now belongs to another program', async () => {
    const file = await tempFile();
    await writeFile(file, JSON.stringify({ pid: process.ppid, ...endpoints }));
    expect(await readEndpoints(file)).toBeUndefined();
  });

  it('counts as absent when it names the reading process itself: a reused pid of a run that is gone', async () => {
    const file = await tempFile();
    await writeEndpoints(endpoints, file);
    expect(await readEndpoints(file)).toBeUndefined();
  });

  it('counts as absent when the run that wrote it is gone (killed without cleaning up)', async () => {
    const file = await tempFile();
    await writeFile(file, JSON.stringify({ pid: deadPid(), ...endpoints }));
    expect(await readEndpoints(file)).toBeUndefined();
  });

  it('is removed by the run that wrote it, never by another run', async () => {
    const file = await tempFile();
    const other = JSON.stringify({ pid: process.ppid, ...endpoints });
    await writeFile(file, other);
    await removeEndpoints(file);
    expect(await readFile(file, 'utf8')).toBe(other);
    await writeEndpoints(endpoints, file);
    await removeEndpoints(file);
    await expect(readFile(file, 'utf8')).rejects.toThrow(/ENOENT/);
  });

  it('names itself when it holds something else', async () => {
    const file = await tempFile();
    await writeFile(file, '{"kafkaBrokers": 1}');
    await expect(readEndpoints(file)).rejects.toThrow(`${file} is not what \`npm run dev\` writes; delete it and start again`);
  });
});

describe('the one-run-per-checkout lock', () => {
  it('is taken by one run, refused to a second while the first runs, and taken over once it is gone', async () => {
    const file = await tempFile();
    await claimDevRun(file);
    expect((await readFile(file, 'utf8')).trim()).toBe(String(process.pid));
    // Another running `npm run dev` holds it.
    const run = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)', 'dev/start.ts'], { stdio: 'ignore' });
    try {
      await writeFile(file, `${run.pid}\n`);
      await expect(claimDevRun(file)).rejects.toThrow(`npm run dev already runs in this checkout (pid ${run.pid}); stop it first`);
      await releaseDevRun(file);
      expect((await readFile(file, 'utf8')).trim()).toBe(String(run.pid));
    } finally {
      run.kill();
    }
    // Its holder gone (killed without cleaning up): the next run takes it over, and gives it up when it stops.
    await writeFile(file, `${deadPid()}\n`);
    await claimDevRun(file);
    expect((await readFile(file, 'utf8')).trim()).toBe(String(process.pid));
    await releaseDevRun(file);
    await expect(readFile(file, 'utf8')).rejects.toThrow(/ENOENT/);
  });
});

describe('the one-run-per-checkout lock under contention', () => {
  it('goes to exactly one of several runs started together over a stale lock', async () => {
    const file = await tempFile();
    await writeFile(file, `${deadPid()}\n`);
    const module = new URL('../../../dev/endpoints-file.ts', import.meta.url).href;
    const script = [
      `const { claimDevRun } = await import(${JSON.stringify(module)});`,
      `const outcome = await claimDevRun(${JSON.stringify(file)}).then(() => 'claimed', () => 'refused');`,
      'process.stdout.write(outcome);',
      // Held while the others try: a run that exited would leave a stale lock, rightly taken over.
      'await new Promise((resolve) => setTimeout(resolve, 1500));',
    ].join('\n');
    const outcomes = await Promise.all(
      Array.from({ length: 6 }, () => {
        // The last argument makes each look like `npm run dev` (its command line names dev/start.ts).
        const child = spawn(process.execPath, ['--input-type=module', '-e', script, 'dev/start.ts'], {
          stdio: ['ignore', 'pipe', 'inherit'],
        });
        let out = '';
        child.stdout.on('data', (chunk) => {
          out += String(chunk);
        });
        return new Promise<string>((resolve) => child.on('exit', () => resolve(out)));
      }),
    );
    expect(outcomes.filter((outcome) => outcome === 'claimed')).toHaveLength(1);
    expect(outcomes.filter((outcome) => outcome === 'refused')).toHaveLength(5);
  });
});
