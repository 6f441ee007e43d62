// Apicurio Registry 3 as a local JVM process: its Quarkus distribution from Maven Central (cached), in-memory storage.
import { mkdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ensureInstalled } from './artifact-cache.ts';
import { classDataArchive } from './class-data-archive.ts';
import { freePorts } from './free-port.ts';
import { findJava } from './java-runtime.ts';
import { copyArtifact } from './maven.ts';
import { registryAnswers, tcpOpen } from './probes.ts';
import { runOrThrow, tail } from './run-command.ts';
import { startSupervised } from './supervised-process.ts';
import type { ProvidedService, StartContext } from './types.ts';
import { APICURIO_VERSION, CCOMPAT_PATH } from './versions.ts';
import { describeError, waitUntil } from './wait-until.ts';

const HOST = '127.0.0.1';
const JVM_FLAGS = ['-Xms64m', '-Xmx512m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-Djava.awt.headless=true'];

export async function startRegistryProcess(
  context: StartContext,
  env: Readonly<Record<string, string | undefined>>,
): Promise<ProvidedService> {
  const java = await findJava(env, { min: 21, purpose: `Apicurio Registry ${APICURIO_VERSION}` });
  const home = join(context.cacheDir, `apicurio-registry-${APICURIO_VERSION}`);
  const install = await ensureInstalled(home, async (staging) => {
    context.log(`fetching Apicurio Registry ${APICURIO_VERSION} (about 160 MB) from Maven Central into ${home}`);
    await copyArtifact(staging, `io.apicurio:apicurio-registry-app:${APICURIO_VERSION}:tar.gz:all`, staging);
    const archive = join(staging, `apicurio-registry-app-${APICURIO_VERSION}-all.tar.gz`);
    await runOrThrow('Unpacking Apicurio Registry', 'tar', ['-xzf', archive, '-C', staging]);
    await rm(archive, { force: true });
  });
  const runner = join(home, 'quarkus-run.jar');

  const dir = join(context.runDir, 'registry');
  await mkdir(dir, { recursive: true });
  const [http, management] = await freePorts(2, HOST);
  const logFile = join(dir, 'registry.log');
  const archive = await classDataArchive(context.cacheDir, `apicurio-registry-${APICURIO_VERSION}`, java);
  const server = startSupervised(
    java.bin,
    [
      ...JVM_FLAGS,
      ...archive.flags,
      `-Dquarkus.http.host=${HOST}`,
      `-Dquarkus.http.port=${http}`,
      // The management interface (health, metrics) would otherwise take the fixed port 9000 on every interface.
      `-Dquarkus.management.host=${HOST}`,
      `-Dquarkus.management.port=${management}`,
      // The default storage is SQL on an in-memory H2 database: nothing survives the process, which suits tests.
      '-Dapicurio.datasource.jdbc.initial-size=1',
      '-Dapicurio.datasource.jdbc.min-size=1',
      `-Dapicurio.storage.snapshot.location=${dir}`,
      '-Dquarkus.log.console.json=false',
      '-jar',
      runner,
    ],
    { cwd: dir, logFile },
  );
  const stop = async () => {
    const code = await server.stop();
    await archive.settle(code);
  };
  const baseUrl = `http://${HOST}:${http}${CCOMPAT_PATH}`;
  const ready = await waitUntil(async () => (await tcpOpen(HOST, http!)) && registryAnswers(baseUrl), {
    timeoutMs: context.readyTimeoutMs,
    exited: server.exited,
  });
  if (!ready.ok) {
    await stop();
    const log = await readFile(logFile, 'utf8').catch(() => '');
    const why =
      ready.reason === 'exited' ? `exited with code ${await server.exited}` : `did not answer within ${context.readyTimeoutMs} ms`;
    throw new Error(
      `Apicurio Registry on ${HOST}:${http} (${java.bin} ${java.version}) ${why}; last error: ${describeError(ready.lastError)}.\n` +
        `Registry log: ${logFile}\n${tail(log, 30)}`,
    );
  }
  const note = `${install === 'cached' ? 'cached distribution' : 'distribution just downloaded'}${archive.reused ? '' : ', recording class-data archive'}`;
  return { endpoint: baseUrl, source: 'process', note, stop };
}
