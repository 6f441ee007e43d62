// Composition root: the only place that reads process.env, builds the clients, wires the modules and handles shutdown.
import packageJson from '../package.json' with { type: 'json' };
import { type Config, ConfigError, loadConfig } from './config.ts';
import { EngineMetrics } from './engine/index.ts';
import { Evaluator } from './evaluation/evaluator.ts';
import { startExecutionRetention } from './evaluation/execution-retention.ts';
import { RuleCatalog } from './evaluation/rule-catalog.ts';
import { ServiceMetrics } from './evaluation/service-metrics.ts';
import { SessionEvaluator } from './evaluation/session-evaluator.ts';
import { SessionMemoryMetrics } from './evaluation/session-metrics.ts';
import { buildApp } from './http/app.ts';
import type { ReadinessCheck } from './http/services.ts';
import { type KafkaPipeline, startKafkaPipeline } from './kafka/index.ts';
import { registerKafkaMetrics } from './kafka/kafka-metrics.ts';
import { createLogger, type Logger, logProcessWarnings } from './logger.ts';
import { openSessionStore } from './sessions/open-session-store.ts';
import { RedisSessionStore } from './sessions/redis-session-store.ts';
import { registerSessionCacheMetrics } from './sessions/session-cache-metrics.ts';
import { openStore } from './store/index.ts';

function readConfig(): Config {
  try {
    return loadConfig(process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
}

async function main(): Promise<void> {
  const config = readConfig();
  const logger = createLogger(config.log.level);
  logProcessWarnings(logger);
  process.on('uncaughtException', (error) => fatal(logger, error, 'uncaught exception'));
  process.on('unhandledRejection', (error) => fatal(logger, error, 'unhandled rejection'));
  if (config.http.apiKeys === null) {
    logger.warn('RULES_API_KEYS is not set: authentication is off and every caller acts as "anonymous" with admin rights');
  }

  const store = await openStore({
    databaseUrl: config.storage.databaseUrl,
    dataDir: config.storage.dataDir,
    onError: (error) => logger.error({ err: error }, 'store background work failed'),
  });
  logger.info({ storage: store.dialect, ...(store.dialect === 'pglite' ? { data_dir: config.storage.dataDir } : {}) }, 'store open');

  const prometheus = config.http.metrics === 'prometheus';
  const engineMetrics = prometheus ? new EngineMetrics() : undefined;
  const catalog = await RuleCatalog.open({
    rules: store.rules,
    ...(engineMetrics === undefined ? {} : { metrics: engineMetrics }),
    onListenerError: (error) => logger.error({ err: error }, 'a rule change listener failed'),
    onReloadError: (error) => logger.warn({ err: error }, 'rules could not be reloaded after a change; trying again'),
  });
  logger.info({ revision: catalog.revision, rules: catalog.engine.size }, 'rules compiled');
  const metrics = prometheus
    ? new ServiceMetrics({ ...(engineMetrics === undefined ? {} : { engineMetrics }), engine: () => catalog.engine })
    : undefined;
  const evaluator = new Evaluator({
    catalog,
    executions: store.executions,
    ...(metrics === undefined ? {} : { observer: metrics.observe }),
  });

  // Session working memory: Redis when configured (every instance shares it), else this process only.
  const sessionStore = await openSessionStore({
    redisUrl: config.redis.url,
    cacheFacts: config.sessions.cacheFacts,
    onError: (error) => logger.warn({ err: error }, 'Redis connection error; sessions answer UNAVAILABLE until it returns'),
  });
  if (config.redis.url === undefined) {
    logger.warn('REDIS_URL is not set: sessions live in this process only; run a single instance or set REDIS_URL');
  } else {
    logger.info({ redis_ready: await sessionStore.ping() }, 'session store: Redis');
  }
  if (metrics !== undefined && sessionStore instanceof RedisSessionStore) registerSessionCacheMetrics(metrics.registry, sessionStore);
  const sessions = new SessionEvaluator({
    catalog,
    rulesets: store.rulesets,
    sessions: sessionStore,
    executions: store.executions,
    maxFacts: config.sessions.maxFacts,
    timestampField: config.sessions.timestampField,
    ...(metrics === undefined ? {} : { observer: metrics.observe }),
    ...(engineMetrics === undefined ? {} : { writes: new SessionMemoryMetrics({ metrics: engineMetrics }) }),
  });

  const retention = startExecutionRetention({
    executions: store.executions,
    retentionMs: config.executions.retentionMs,
    intervalMs: config.executions.cleanupIntervalMs,
    onDeleted: (count) => {
      if (count > 0) logger.info({ deleted: count }, 'expired executions deleted');
    },
    onError: (error) => logger.warn({ err: error }, 'execution cleanup failed; retrying at the next interval'),
  });

  const readiness: Record<string, ReadinessCheck> = {};
  const readinessDetails: Record<string, () => unknown> = {};
  if (config.redis.url !== undefined) readiness.redis = () => sessionStore.ping();
  let kafka: KafkaPipeline | undefined;
  // Kafka: facts in, results out, rule changes broadcast; readiness and lag reach HTTP only through these callbacks.
  if (config.kafka.brokers.length > 0) {
    kafka = await startKafkaPipeline({
      config: config.kafka,
      evaluator,
      sessions,
      rules: catalog,
      logger,
      logLevel: config.log.level,
      pendingExecutions: () => store.executions.pendingCount(),
    });
    const pipeline = kafka;
    readiness.kafka = () => pipeline.state().ready;
    readinessDetails.kafka = () => pipeline.state();
    if (metrics !== undefined) registerKafkaMetrics(metrics.registry, pipeline);
  } else {
    logger.info('Kafka disabled: KAFKA_BROKERS not set, serving HTTP only');
  }

  const app = await buildApp({
    config: config.http,
    version: packageJson.version,
    store,
    catalog,
    logger,
    evaluator,
    sessions,
    metrics,
    readiness,
    readinessDetails,
  });
  await app.listen({ port: config.http.port, host: config.http.host });

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: no new requests, finishing those in flight');
    // A stuck dependency must not keep the process alive forever.
    setTimeout(() => fatal(logger, new Error('shutdown timed out'), 'shutdown took too long'), config.shutdownTimeoutMs).unref();
    try {
      await app.close();
      await kafka?.stop();
      await retention.stop();
      await sessionStore.close();
      // Closing the store writes every pending execution first.
      await store.close();
      logger.info('stopped');
      logger.flush();
      process.exit(0);
    } catch (error) {
      fatal(logger, error, 'shutdown failed');
    }
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
}

function fatal(logger: Logger, error: unknown, message: string): never {
  logger.fatal({ err: error }, message);
  logger.flush();
  process.exit(1);
}

/** The error's stack and every cause below it, so a wrapped failure (a refused connection) is named, not hidden. */
function describeFailure(error: unknown): string {
  const lines: string[] = [];
  for (let current = error, depth = 0; current !== undefined && current !== null && depth < 5; depth++) {
    lines.push(
      current instanceof Error ? (depth === 0 ? (current.stack ?? current.message) : `caused by: ${current.message}`) : String(current),
    );
    current = current instanceof Error ? current.cause : undefined;
  }
  return lines.join('\n');
}

main().catch((error: unknown) => {
  process.stderr.write(`start-up failed: ${describeFailure(error)}\n`);
  process.exit(1);
});
