// Apache Kafka as a local JVM process: jars from Maven Central (cached), KRaft storage formatted per run, free ports.
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ensureInstalled } from './artifact-cache.ts';
import { classDataArchive } from './class-data-archive.ts';
import { freePorts } from './free-port.ts';
import { findJava } from './java-runtime.ts';
import { log4jProperties, randomClusterId, serverProperties } from './kafka-config.ts';
import { copyDependencies } from './maven.ts';
import { kafkaAnswers, tcpOpen, warmUpKafka } from './probes.ts';
import { runOrThrow, tail } from './run-command.ts';
import { startSupervised } from './supervised-process.ts';
import type { ProvidedService, StartContext } from './types.ts';
import { KAFKA_VERSION, RELOAD4J_VERSION, SLF4J_VERSION } from './versions.ts';
import { describeError, waitUntil } from './wait-until.ts';

const HOST = '127.0.0.1';

// C1 only and a serial collector: a test broker needs a quick start on two shared cores, not peak throughput.
const JVM_FLAGS = ['-Xms128m', '-Xmx512m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-Djava.awt.headless=true'];

export async function startKafkaProcess(
  context: StartContext,
  env: Readonly<Record<string, string | undefined>>,
): Promise<ProvidedService> {
  const java = await findJava(env, { min: 17, max: 21, purpose: `Apache Kafka ${KAFKA_VERSION}` });
  const home = join(context.cacheDir, `kafka-${KAFKA_VERSION}`);
  const install = await ensureInstalled(home, async (staging) => {
    context.log(`fetching Apache Kafka ${KAFKA_VERSION} jars from Maven Central into ${home}`);
    await copyDependencies(
      staging,
      [
        { groupId: 'org.apache.kafka', artifactId: 'kafka_2.13', version: KAFKA_VERSION },
        { groupId: 'org.slf4j', artifactId: 'slf4j-reload4j', version: SLF4J_VERSION },
        { groupId: 'ch.qos.reload4j', artifactId: 'reload4j', version: RELOAD4J_VERSION },
      ],
      join(staging, 'libs'),
    );
  });
  const libs = join(home, 'libs');
  const jars = (await readdir(libs)).filter((name) => name.endsWith('.jar')).sort();
  if (!jars.some((name) => name.startsWith('kafka_2.13-')))
    throw new Error(`the Kafka cache ${home} has no kafka_2.13 jar; delete it to fetch again`);

  const dir = join(context.runDir, 'kafka');
  await mkdir(join(dir, 'data'), { recursive: true });
  const [broker, controller] = await freePorts(2, HOST);
  const properties = join(dir, 'server.properties');
  const brokerLog = join(dir, 'server.log');
  const argsFile = join(dir, 'classpath.args');
  await writeFile(properties, serverProperties({ broker: broker!, controller: controller! }, join(dir, 'data'), HOST));
  await writeFile(join(dir, 'log4j.properties'), log4jProperties(brokerLog));
  // An argument file keeps the 60-jar class path out of process listings and error messages.
  await writeFile(argsFile, `-cp ${jars.map((name) => join(libs, name)).join(':')}\n`);
  const base = [...JVM_FLAGS, `-Dlog4j.configuration=file:${join(dir, 'log4j.properties')}`];
  let archive = await classDataArchive(context.cacheDir, `kafka-${KAFKA_VERSION}`, java);
  // In the run folder: a JVM that crashes writes its report (hs_err_pid….log) to its working directory.
  const format = (flags: readonly string[]) =>
    runOrThrow(
      'Kafka storage format',
      java.bin,
      [...base, ...flags, `@${argsFile}`, 'kafka.tools.StorageTool', 'format', '--cluster-id', randomClusterId(), '--config', properties],
      { cwd: dir, timeoutMs: context.readyTimeoutMs },
    );
  try {
    // Only a reused archive helps the formatter; recording one is the broker's job.
    await format(archive.reused ? archive.flags : []).catch(async (error: unknown) => {
      if (!archive.reused) throw error;
      // A damaged archive crashes every JVM that maps it (SIGBUS on a cut-short file): without it, and record a new one.
      await archive.discard();
      archive = await classDataArchive(context.cacheDir, `kafka-${KAFKA_VERSION}`, java);
      await rm(join(dir, 'data'), { recursive: true, force: true });
      await mkdir(join(dir, 'data'), { recursive: true });
      await format([]);
    });
  } catch (error) {
    // A jar cut short or missing reads as a class Java cannot find: say where the cache is.
    throw new Error(`${(error as Error).message}\nIf the Kafka cache ${home} is damaged, delete it to fetch again.`, { cause: error });
  }

  const endpoint = `${HOST}:${broker}`;
  const server = startSupervised(java.bin, [...base, ...archive.flags, `@${argsFile}`, 'kafka.Kafka', properties], {
    cwd: dir,
    logFile: join(dir, 'stdout.log'),
  });
  const stop = async () => {
    const code = await server.stop();
    await archive.settle(code);
  };
  const ready = await waitUntil(async () => (await tcpOpen(HOST, broker!)) && kafkaAnswers([endpoint]), {
    timeoutMs: context.readyTimeoutMs,
    exited: server.exited,
  });
  if (!ready.ok) {
    await stop();
    const log = await readFile(brokerLog, 'utf8').catch(() => readFile(join(dir, 'stdout.log'), 'utf8').catch(() => ''));
    const why =
      ready.reason === 'exited' ? `exited with code ${await server.exited}` : `did not answer within ${context.readyTimeoutMs} ms`;
    throw new Error(
      `Kafka broker on ${endpoint} (${java.bin} ${java.version}) ${why}; last error: ${describeError(ready.lastError)}.\n` +
        `Broker log: ${brokerLog}\n${tail(log, 30)}`,
    );
  }
  try {
    await warmUpKafka([endpoint]);
  } catch (error) {
    await stop();
    throw new Error(
      `Kafka broker on ${endpoint} answered but could not create its internal topics: ${describeError(error)}\nBroker log: ${brokerLog}`,
    );
  }
  const note = `${install === 'cached' ? 'cached jars' : 'jars just downloaded'}${archive.reused ? '' : ', recording class-data archive'}`;
  return { endpoint, source: 'process', note, stop };
}
