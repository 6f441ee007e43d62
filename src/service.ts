// Composition root: the only place that reads process.env, builds the clients, wires the modules and handles shutdown
// (started by main.ts, which hears stop signals before these modules load).
import packageJson from '../package.json' with { type: 'json' };
import { type Config, ConfigError, loadConfig } from './config.ts';
import { EngineMetrics } from './engine/index.ts';
import { errorChain } from './errors.ts';
import { Evaluator } from './evaluation/evaluator.ts';
import { startExecutionRetention } from './evaluation/execution-retention.ts';
import { RuleCatalog } from './evaluation/rule-catalog.ts';
import { watchRuleRevision } from './evaluation/rule-revision-watch.ts';
import { ServiceMetrics } from './evaluation/service-metrics.ts';
import { SessionEvaluator } from './evaluation/session-evaluator.ts';
import { SessionMemoryMetrics } from './evaluation/session-metrics.ts';
import { buildApp } from './http/app.ts';
import type { ReadinessCheck } from './http/services.ts';
import { backlogPauseAt, type KafkaPipeline, startKafkaPipeline } from './kafka/index.ts';
import { registerKafkaMetrics } from './kafka/kafka-metrics.ts';
import { Lifecycle, StopRequested } from './lifecycle.ts';
import { createLogger, type Logger, logProcessWarnings } from './logger.ts';
import { openSessionStore } from './sessions/open-session-store.ts';
import { describeRedisError } from './sessions/redis-errors.ts';
import { RedisSessionStore } from './sessions/redis-session-store.ts';
import { registerSessionCacheMetrics } from './sessions/session-cache-metrics.ts';
import { executionBacklog, openStore } from './store/index.ts';

/** How often an instance on PostgreSQL checks whether another one changed the rules. */
const RULE_REVISION_WATCH_MS = 1_000;

/** Longest a stop during start-up waits for the Kafka pipeline to start (a third of RULES_SHUTDOWN_TIMEOUT when less). */
const KAFKA_START_WAIT_ON_STOP_MS = 5_000;

function readConfig(): Config {
  try {
    return loadConfig(process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
}

/** Hands the service's signal handler to whoever listens for SIGTERM and SIGINT (main.ts: for good, from the first moment). */
export type StopSignals = (onSignal: (signal: string) => void) => void;

export async function runService(signals: StopSignals): Promise<void> {
  const config = readConfig();
  const apiKeys = config.http.apiKeys?.map((apiKey) => apiKey.key);
  const logger = createLogger(config.log.level, undefined, apiKeys);
  logProcessWarnings(logger);
  process.on('uncaughtException', (error) => fatal(logger, error, 'uncaught exception'));
  process.on('unhandledRejection', (error) => fatal(logger, error, 'unhandled rejection'));

  // Signals are heard from the first moment: one during start-up ends it once the step in progress is done.
  const lifecycle = new Lifecycle();
  const parts: OpenedParts = {};
  let started = false;
  const onSignal = (signal: string) => {
    if (!lifecycle.requestStop(signal)) return;
    // A stuck dependency must not keep the process alive forever; what is lost then is said.
    setTimeout(() => {
      const pending = parts.pendingExecutions?.() ?? 0;
      const lost = pending > 0 ? `; ${pending} pending executions could not be written and are lost` : '';
      fatal(logger, new Error('shutdown timed out'), `shutdown took too long${lost}`);
    }, config.shutdownTimeoutMs).unref();
    if (started) {
      logger.info({ signal }, 'shutting down: no new requests, finishing those in flight');
      void stop(lifecycle, logger);
    } else {
      logger.info({ signal }, 'stop requested during start-up: stopping once the step in progress is done');
    }
  };
  signals(onSignal);

  try {
    await start(config, logger, lifecycle, parts);
    started = true;
  } catch (error) {
    if (error instanceof StopRequested) {
      if (error.leftBehind !== undefined) logger.warn(`${error.leftBehind} was still starting when its wait ran out; stopping without it`);
      return stop(lifecycle, logger);
    }
    // A stop was asked for: a step that failed meanwhile (its dependency away) ends start-up as the stop would.
    if (lifecycle.stopSignal !== undefined) {
      logger.warn({ err: error }, 'a start-up step failed after the stop was requested; stopping');
      return stop(lifecycle, logger);
    }
    const step = lifecycle.stepInProgress === undefined ? '' : ` (opening ${lifecycle.stepInProgress})`;
    process.stderr.write(`start-up failed${step}: ${describeFailure(error)}\n`);
    logger.debug({ err: error }, 'start-up failure, in full');
    // What was opened is closed (the data directory unlocked, pending writes kept), within the same bound as a stop.
    setTimeout(
      () => fatal(logger, new Error('closing timed out'), 'closing after a failed start-up took too long'),
      config.shutdownTimeoutMs,
    ).unref();
    await lifecycle.closeAll().catch((closeError: unknown) => logger.error({ err: closeError }, 'closing after a failed start-up failed'));
    logger.flush();
    process.exit(1);
  }
}

/** Closes everything newest first (the HTTP server, Kafka, retention, sessions, then the store's pending writes) and exits. */
async function stop(lifecycle: Lifecycle, logger: Logger): Promise<void> {
  try {
    await lifecycle.closeAll();
    logger.info('stopped');
    logger.flush();
    process.exit(0);
  } catch (error) {
    fatal(logger, error, 'shutdown failed');
  }
}

/** What a stop that runs out of time reports on, filled in as start-up opens the parts. */
interface OpenedParts {
  pendingExecutions?: () => number;
}

/** Opens the store, the engine, sessions, Kafka and the HTTP server, each registered with the lifecycle as it opens. */
async function start(config: Config, logger: Logger, lifecycle: Lifecycle, parts: OpenedParts): Promise<void> {
  if (config.http.apiKeys === null) {
    logger.warn('RULES_API_KEYS is not set: authentication is off and every caller acts as "anonymous" with admin rights');
  }

  const store = await lifecycle.open(
    'the store',
    () =>
      openStore({
        databaseUrl: config.storage.databaseUrl,
        dataDir: config.storage.dataDir,
        onError: (error) => logger.error({ err: error }, 'store background work failed'),
      }),
    // Closing the store writes every pending execution first.
    (opened) => opened.close(),
  );
  logger.info({ storage: store.dialect, ...(store.dialect === 'pglite' ? { data_dir: config.storage.dataDir } : {}) }, 'store open');
  parts.pendingExecutions = () => store.executions.pendingCount();

  const prometheus = config.http.metrics === 'prometheus';
  const engineMetrics = prometheus ? new EngineMetrics() : undefined;
  const catalog = await lifecycle.open(
    'the rule catalog',
    () =>
      RuleCatalog.open({
        rules: store.rules,
        ...(engineMetrics === undefined ? {} : { metrics: engineMetrics }),
        onListenerError: (error) => logger.error({ err: error }, 'a rule change listener failed'),
        onReloadError: (error) => logger.warn({ err: error }, 'rules could not be reloaded after a change; trying again'),
      }),
    () => undefined,
  );
  logger.info({ revision: catalog.revision, rules: catalog.engine.size }, 'rules compiled');
  // Instances sharing one PostgreSQL see each other's rule changes within a second, Kafka or not (PGlite has one process).
  if (store.dialect === 'postgres') {
    await lifecycle.open(
      'the rule revision watch',
      () =>
        watchRuleRevision({
          catalog,
          rules: store.rules,
          intervalMs: RULE_REVISION_WATCH_MS,
          onError: (error) => logger.warn({ err: error }, 'the rule revision could not be read; this instance may lag behind rule changes'),
          onRecovered: () => logger.info('the rule revision is read again'),
          onStoreBehind: (storeRevision, ownRevision) =>
            logger.error(
              { store_revision: storeRevision, engine_revision: ownRevision },
              "the store's rule revision is behind this instance's (a restored database?): restart the instance to load the store's rules",
            ),
        }),
      (watch) => watch.stop(),
    );
  }
  const metrics = prometheus
    ? new ServiceMetrics({ ...(engineMetrics === undefined ? {} : { engineMetrics }), engine: () => catalog.engine })
    : undefined;
  const evaluator = new Evaluator({
    catalog,
    executions: store.executions,
    ...(metrics === undefined ? {} : { observer: metrics.observe }),
  });

  // Session working memory: Redis when configured (every instance shares it), else this process only.
  const sessionStore = await lifecycle.open(
    'the session store',
    () =>
      openSessionStore({
        redisUrl: config.redis.url,
        keyPrefix: config.redis.keyPrefix,
        commandTimeoutMs: config.redis.commandTimeoutMs,
        cacheFacts: config.sessions.cacheFacts,
        // The message and code only: ioredis's error carries the failed command, whose arguments hold REDIS_URL's password.
        onError: (error) =>
          logger.warn(
            { error: { message: describeRedisError(error, config.redis.url ?? ''), code: (error as { code?: unknown }).code } },
            'Redis connection error; sessions answer UNAVAILABLE until it returns',
          ),
        onReconnect: () => logger.info('Redis connection restored; sessions are served again'),
      }),
    (opened) => opened.close(),
  );
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
    maxBytes: config.sessions.maxBytes,
    timestampField: config.sessions.timestampField,
    implicitTtlSeconds: config.sessions.streamingTtlSeconds,
    ...(metrics === undefined ? {} : { observer: metrics.observe }),
    ...(engineMetrics === undefined ? {} : { writes: new SessionMemoryMetrics({ metrics: engineMetrics }) }),
  });

  await lifecycle.open(
    'the execution cleanup',
    () =>
      startExecutionRetention({
        executions: store.executions,
        retentionMs: config.executions.retentionMs,
        intervalMs: config.executions.cleanupIntervalMs,
        onDeleted: (count) => {
          if (count > 0) logger.info({ deleted: count }, 'expired executions deleted');
        },
        onError: (error) => logger.warn({ err: error }, 'execution cleanup failed; retrying at the next interval'),
      }),
    (retention) => retention.stop(),
  );

  const readiness: Record<string, ReadinessCheck> = {};
  const readinessDetails: Record<string, () => unknown> = {};
  if (config.redis.url !== undefined) readiness.redis = () => sessionStore.ping();
  // Kafka: facts in, results out, rule changes broadcast; readiness and lag reach HTTP only through these callbacks.
  if (config.kafka.brokers.length > 0) {
    const pipeline = await lifecycle.open(
      'the Kafka pipeline',
      () =>
        startKafkaPipeline({
          config: config.kafka,
          evaluator,
          sessions,
          rules: catalog,
          logger,
          logLevel: config.log.level,
          pendingExecutions: () => executionBacklog(store.executions),
          tuning: { maxPendingExecutions: backlogPauseAt(config.http.executionBacklogMax) },
        }),
      // The batch in hand finishes and commits.
      (opened: KafkaPipeline) => opened.stop(),
      // Starting it commits nothing: a broker that never answers must not hold a stop past its timeout.
      { leaveBehindAfterMs: Math.min(KAFKA_START_WAIT_ON_STOP_MS, config.shutdownTimeoutMs / 3) },
    );
    readiness.kafka = () => pipeline.state().ready;
    readinessDetails.kafka = () => pipeline.state();
    if (metrics !== undefined) registerKafkaMetrics(metrics.registry, pipeline);
  } else {
    logger.info('Kafka disabled: KAFKA_BROKERS not set, serving HTTP only');
  }

  await lifecycle.open(
    'the HTTP server',
    async () => {
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
      return app;
    },
    // Stops accepting, finishes the requests in flight.
    (app) => app.close(),
  );
}

function fatal(logger: Logger, error: unknown, message: string): never {
  logger.fatal({ err: error }, message);
  logger.flush();
  process.exit(1);
}

/** The error and every cause below it, a line each, so a wrapped failure (a refused connection) is named, not hidden. */
function describeFailure(error: unknown): string {
  // What failed and why, not this program's call stack (RULES_LOG_LEVEL=debug logs the whole error).
  return errorChain(error).join('\ncaused by: ');
}

/** A failure before the service could report it itself (its logger not made yet). */
export function failedToStart(error: unknown): never {
  process.stderr.write(`start-up failed: ${describeFailure(error)}\n`);
  process.exit(1);
}
