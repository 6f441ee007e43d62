// Installs a downloaded distribution into the cache exactly once, even when two test runs start cold at the same time.
import { randomBytes } from 'node:crypto';
import { access, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { removeAbandoned } from './abandoned-files.ts';

const COMPLETE_MARKER = '.complete';

export async function isInstalled(dir: string): Promise<boolean> {
  return access(join(dir, COMPLETE_MARKER)).then(
    () => true,
    () => false,
  );
}

/**
 * Returns 'cached' when `dir` is already complete; otherwise runs `install` into a private staging folder and renames
 * it into place, so a half-finished download is never mistaken for a cached one.
 */
export async function ensureInstalled(dir: string, install: (staging: string) => Promise<void>): Promise<'cached' | 'downloaded'> {
  if (await isInstalled(dir)) return 'cached';
  // A download cut short by a killed run (hundreds of MB) is not kept.
  await removeAbandoned(dir, '.staging-');
  const staging = `${dir}.staging-${process.pid}-${randomBytes(4).toString('hex')}`;
  await mkdir(staging, { recursive: true });
  try {
    await install(staging);
    await writeFile(join(staging, COMPLETE_MARKER), `${new Date().toISOString()}\n`);
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
    await rename(staging, dir);
    return 'downloaded';
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    // A parallel run finished the same install first: use its copy.
    if (await isInstalled(dir)) return 'downloaded';
    throw error;
  }
}
