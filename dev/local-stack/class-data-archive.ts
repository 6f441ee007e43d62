// JVM class-data sharing: the first run records the classes it loaded, later runs map them and start about twice as fast.
import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { removeAbandoned } from './abandoned-files.ts';
import type { JavaRuntime } from './java-runtime.ts';

export interface ClassDataArchive {
  /** JVM flags: use the archive when there is one, otherwise write a new one when the JVM exits. */
  readonly flags: string[];
  readonly reused: boolean;
  /** After the JVM has exited: keep a freshly written archive if the JVM shut down cleanly, else discard it. */
  settle(exitCode: number | null): Promise<void>;
  /** Deletes a reused archive that a JVM could not start with (damaged: a cut-short one crashes every JVM mapping it). */
  discard(): Promise<void>;
}

// 0 and 143 (SIGTERM) are clean JVM exits; a SIGKILLed JVM may have left a partial file.
const CLEAN_EXITS = new Set([0, 130, 143]);

/** An archive is only valid for the same JVM build and the same class path, so both name it. */
export async function classDataArchive(cacheDir: string, name: string, java: JavaRuntime): Promise<ClassDataArchive> {
  const dir = join(cacheDir, 'class-data');
  const file = join(dir, `${name}-java-${java.version}.jsa`);
  const size = await stat(file).then(
    (info) => info.size,
    () => 0,
  );
  if (size > 0) {
    return {
      flags: [`-XX:SharedArchiveFile=${file}`, '-Xshare:auto'],
      reused: true,
      settle: async () => undefined,
      discard: () => rm(file, { force: true }),
    };
  }
  await mkdir(dir, { recursive: true });
  // Archives being recorded by runs that were killed (tens of MB each).
  await removeAbandoned(file, '.');
  // Written under a private name and renamed, so parallel first runs never see each other's half-written file.
  const pending = `${file}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`;
  return {
    flags: [`-XX:ArchiveClassesAtExit=${pending}`],
    reused: false,
    async settle(exitCode) {
      const written = await stat(pending).then(
        (info) => info.size > 0,
        () => false,
      );
      if (written && exitCode !== null && CLEAN_EXITS.has(exitCode)) await rename(pending, file).catch(() => rm(pending, { force: true }));
      else await rm(pending, { force: true });
    },
    discard: () => rm(pending, { force: true }),
  };
}
