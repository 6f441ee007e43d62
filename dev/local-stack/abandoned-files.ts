// Files and folders a run names after its pid while it writes them: what a killed run left is removed by the next one.
import { readdir, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { processExists } from './process-exists.ts';

/**
 * Removes the entries beside `path` named `<name of path><separator><pid>-…` whose process is gone (a download's staging
 * folder, a class-data archive being recorded); those of live processes, this one included, are left alone.
 */
export async function removeAbandoned(path: string, separator: string): Promise<void> {
  const prefix = `${basename(path)}${separator}`;
  const entries = await readdir(dirname(path)).catch(() => [] as string[]);
  for (const entry of entries) {
    if (!entry.startsWith(prefix)) continue;
    const pid = Number(/^(\d+)-/.exec(entry.slice(prefix.length))?.[1]);
    if (Number.isInteger(pid) && pid > 0 && !processExists(pid)) await rm(join(dirname(path), entry), { recursive: true, force: true });
  }
}
