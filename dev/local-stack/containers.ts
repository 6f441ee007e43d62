// The Testcontainers path, taken when a container runtime answers: the same four services as images, on mapped ports.
import { existsSync } from 'node:fs';
import { homedir, userInfo } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { StartedTestContainer } from 'testcontainers';
import { freePorts } from './free-port.ts';
import { kafkaAnswers, warmUpKafka } from './probes.ts';
import type { ProvidedService, ServiceName } from './types.ts';
import { APICURIO_VERSION, CCOMPAT_PATH, KAFKA_VERSION } from './versions.ts';
import { waitUntil } from './wait-until.ts';

export const IMAGES = {
  kafka: `apache/kafka:${KAFKA_VERSION}`,
  registry: `apicurio/apicurio-registry:${APICURIO_VERSION}`,
  redis: 'redis:7-alpine',
  postgres: 'postgres:16-alpine',
} as const satisfies Record<ServiceName, string>;

/**
 * Cheap pre-check mirroring Testcontainers' runtime strategies (DOCKER_HOST, ~/.testcontainers.properties, the usual
 * sockets), so that machines without Docker never pay for loading the library.
 */
export function containerRuntimeMayExist(env: Readonly<Record<string, string | undefined>>): boolean {
  if (process.platform === 'win32') return true;
  if (env.DOCKER_HOST !== undefined && env.DOCKER_HOST !== '') return true;
  const home = homedir();
  const candidates = [
    join(home, '.testcontainers.properties'),
    '/var/run/docker.sock',
    join(home, '.docker', 'run', 'docker.sock'),
    join(home, '.docker', 'desktop', 'docker.sock'),
    join('/run', 'user', String(userInfo().uid), 'docker.sock'),
  ];
  if (env.XDG_RUNTIME_DIR) candidates.push(join(env.XDG_RUNTIME_DIR, 'docker.sock'));
  return candidates.some((path) => existsSync(path));
}

/** True when Testcontainers finds a runtime that answers within `timeoutMs`; never throws. */
export async function containerRuntimeAnswers(env: Readonly<Record<string, string | undefined>>, timeoutMs = 3_000): Promise<boolean> {
  if (!containerRuntimeMayExist(env)) return false;
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    const answer = await Promise.race([getContainerRuntimeClient().then(() => true), sleep(timeoutMs, false, { ref: false })]);
    return answer;
  } catch {
    return false;
  }
}

export async function startContainer(service: ServiceName, readyTimeoutMs: number): Promise<ProvidedService> {
  const { GenericContainer, Wait, getContainerRuntimeClient } = await import('testcontainers');
  let started: StartedTestContainer;
  let endpoint: string;
  switch (service) {
    case 'kafka': {
      // The broker must advertise the address clients dial, so the host port is chosen before the container starts.
      const host = (await getContainerRuntimeClient()).info.containerRuntime.host;
      const [port] = await freePorts(1);
      started = await new GenericContainer(IMAGES.kafka)
        .withExposedPorts({ container: 9092, host: port! })
        .withEnvironment({
          KAFKA_NODE_ID: '1',
          KAFKA_PROCESS_ROLES: 'broker,controller',
          KAFKA_LISTENERS: 'PLAINTEXT://:9092,CONTROLLER://:9093',
          KAFKA_ADVERTISED_LISTENERS: `PLAINTEXT://${host}:${port}`,
          KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
          KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: 'CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
          KAFKA_CONTROLLER_QUORUM_VOTERS: '1@localhost:9093',
          KAFKA_INTER_BROKER_LISTENER_NAME: 'PLAINTEXT',
          KAFKA_AUTO_CREATE_TOPICS_ENABLE: 'false',
          KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
          KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS: '1',
          KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
          KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
          KAFKA_TRANSACTION_STATE_LOG_NUM_PARTITIONS: '1',
          KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
        })
        .withStartupTimeout(readyTimeoutMs)
        .withWaitStrategy(Wait.forListeningPorts())
        .start();
      endpoint = `${host}:${port}`;
      const ready = await waitUntil(() => kafkaAnswers([endpoint]), { timeoutMs: readyTimeoutMs });
      if (!ready.ok) {
        await started.stop();
        throw new Error(`Kafka container ${IMAGES.kafka} on ${endpoint} did not answer within ${readyTimeoutMs} ms`);
      }
      await warmUpKafka([endpoint]);
      break;
    }
    case 'registry':
      started = await new GenericContainer(IMAGES.registry)
        .withExposedPorts(8080)
        .withWaitStrategy(Wait.forHttp(`${CCOMPAT_PATH}/subjects`, 8080).forStatusCode(200))
        .withStartupTimeout(readyTimeoutMs)
        .start();
      endpoint = `http://${started.getHost()}:${started.getMappedPort(8080)}${CCOMPAT_PATH}`;
      break;
    case 'redis':
      started = await new GenericContainer(IMAGES.redis)
        .withExposedPorts(6379)
        .withCommand(['redis-server', '--save', '', '--appendonly', 'no'])
        .withWaitStrategy(Wait.forLogMessage('Ready to accept connections'))
        .withStartupTimeout(readyTimeoutMs)
        .start();
      endpoint = `redis://${started.getHost()}:${started.getMappedPort(6379)}`;
      break;
    case 'postgres':
      started = await new GenericContainer(IMAGES.postgres)
        .withExposedPorts(5432)
        .withEnvironment({ POSTGRES_DB: 'test', POSTGRES_USER: 'postgres', POSTGRES_PASSWORD: 'postgres' })
        // The entrypoint starts the server twice (init, then for real); the second message means ready.
        .withWaitStrategy(Wait.forLogMessage(/database system is ready to accept connections/, 2))
        .withStartupTimeout(readyTimeoutMs)
        .start();
      endpoint = `postgres://postgres:postgres@${started.getHost()}:${started.getMappedPort(5432)}/test`;
      break;
  }
  const container = started;
  return { endpoint, source: 'testcontainers', note: IMAGES[service], stop: async () => void (await container.stop()) };
}
