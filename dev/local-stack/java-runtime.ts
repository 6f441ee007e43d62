// Finds a Java runtime of the version a service needs: JAVA_HOME, then `java` on PATH, then the usual JVM folders.
import { access, readdir, readFile, realpath } from 'node:fs/promises';
import { delimiter, dirname, join } from 'node:path';
import { runCommand } from './run-command.ts';

export interface JavaRuntime {
  readonly bin: string;
  readonly major: number;
  /** The full version, e.g. "17.0.15"; it names class-data archives, which only fit the JVM that wrote them. */
  readonly version: string;
}

export interface JavaRequirement {
  /** Lowest major version that runs the service. */
  readonly min: number;
  /** Highest major version the service is known to run on; newer ones are used only when nothing fits. */
  readonly max?: number;
  /** Names the service in the error when nothing fits. */
  readonly purpose: string;
}

const JVM_FOLDERS = ['/usr/lib/jvm', '/usr/java', '/Library/Java/JavaVirtualMachines'];
const found = new Map<string, Promise<JavaRuntime | undefined>>();

export async function findJava(env: Readonly<Record<string, string | undefined>>, need: JavaRequirement): Promise<JavaRuntime> {
  const candidates = await candidateBinaries(env);
  const runtimes: JavaRuntime[] = [];
  for (const bin of candidates) {
    const runtime = await describe(bin);
    if (runtime !== undefined && !runtimes.some((known) => known.bin === runtime.bin)) runtimes.push(runtime);
  }
  const fits = runtimes.find((runtime) => runtime.major >= need.min && runtime.major <= (need.max ?? Number.POSITIVE_INFINITY));
  const newer = runtimes.find((runtime) => runtime.major >= need.min);
  const chosen = fits ?? newer;
  if (chosen !== undefined) return chosen;
  const seen = runtimes.length === 0 ? 'none' : runtimes.map((runtime) => `${runtime.bin} (${runtime.version})`).join(', ');
  throw new Error(
    `${need.purpose} needs Java ${need.min} or newer; Java runtimes found: ${seen}. ` +
      `Install a JDK ${need.min}+ (e.g. \`apt-get install openjdk-${need.min}-jre-headless\`) or point JAVA_HOME at one.`,
  );
}

async function candidateBinaries(env: Readonly<Record<string, string | undefined>>): Promise<string[]> {
  const list: string[] = [];
  const javaHome = env.JAVA_HOME?.trim();
  if (javaHome) list.push(join(javaHome, 'bin', 'java'));
  for (const dir of (env.PATH ?? '').split(delimiter)) if (dir !== '') list.push(join(dir, 'java'));
  const installed: JavaRuntime[] = [];
  for (const folder of JVM_FOLDERS) {
    const entries = await readdir(folder).catch(() => [] as string[]);
    for (const entry of entries) {
      for (const bin of [join(folder, entry, 'bin', 'java'), join(folder, entry, 'Contents', 'Home', 'bin', 'java')]) {
        const runtime = await describe(bin);
        if (runtime !== undefined) installed.push(runtime);
      }
    }
  }
  // Among installed JVMs the newest is tried first; JAVA_HOME and PATH keep precedence over all of them.
  installed.sort((a, b) => b.major - a.major);
  return [...list, ...installed.map((runtime) => runtime.bin)];
}

function describe(bin: string): Promise<JavaRuntime | undefined> {
  let pending = found.get(bin);
  if (pending === undefined) {
    pending = readVersion(bin);
    found.set(bin, pending);
  }
  return pending;
}

async function readVersion(bin: string): Promise<JavaRuntime | undefined> {
  const real = await realpath(bin).catch(() => undefined);
  if (
    real === undefined ||
    !(await access(real).then(
      () => true,
      () => false,
    ))
  )
    return undefined;
  // A JDK's release file answers without starting a JVM; `java -version` is the fallback.
  const release = await readFile(join(dirname(dirname(real)), 'release'), 'utf8').catch(() => '');
  let version = /^JAVA_VERSION="([^"]+)"/m.exec(release)?.[1];
  if (version === undefined) {
    const result = await runCommand(real, ['-version']).catch(() => undefined);
    version = result === undefined ? undefined : /version "([^"]+)"/.exec(result.output)?.[1];
  }
  if (version === undefined) return undefined;
  const parts = version.split(/[.+_-]/);
  const major = Number(parts[0] === '1' ? parts[1] : parts[0]);
  return Number.isInteger(major) ? { bin: real, major, version } : undefined;
}
