// Builds the HTTP API as a Fastify instance from its dependencies; it never listens (service.ts does, tests inject).
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import type { HttpConfig } from '../config.ts';
import { AppError } from '../errors.ts';
import { Evaluator } from '../evaluation/evaluator.ts';
import { RuleAdmin } from '../evaluation/rule-admin.ts';
import type { RuleCatalog } from '../evaluation/rule-catalog.ts';
import type { ServiceMetrics } from '../evaluation/service-metrics.ts';
import { SessionEvaluator, type SessionEvaluatorOptions } from '../evaluation/session-evaluator.ts';
import type { Logger } from '../logger.ts';
import { MemorySessionStore } from '../sessions/memory-session-store.ts';
import type { SessionStore } from '../sessions/session-store.ts';
import type { Store } from '../store/types.ts';
import { registerAuth } from './auth.ts';
import { trackConnections } from './connection-drain.ts';
import {
  answerUnroutedRequests,
  clientErrorReplier,
  frameworkErrorReplier,
  MAX_PARAM_LENGTH,
  registerErrorHandling,
} from './error-handler.ts';
import { registerJsonBody } from './json-body.ts';
import { registerOpenApi } from './openapi.ts';
import { LazyRequestLogger } from './request-logger.ts';
import { type CountUnrouted, registerRequestMetrics } from './request-metrics.ts';
import { healthRoutes } from './routes/health.ts';
import { auditRoutes } from './routes/v1/audit.ts';
import { evaluationRoutes } from './routes/v1/evaluation.ts';
import { executionRoutes } from './routes/v1/executions.ts';
import { metricsRoutes } from './routes/v1/metrics.ts';
import { ruleRoutes } from './routes/v1/rules.ts';
import { rulesetRoutes } from './routes/v1/rulesets.ts';
import { sessionRoutes } from './routes/v1/sessions.ts';
import { executionsKeepingUp, type HttpServices, type ReadinessCheck } from './services.ts';
import { refuseUndeclaredInput } from './undeclared-input.ts';
import { jsonSerializerCompiler, zodValidatorCompiler } from './zod-compilers.ts';

export interface AppDependencies {
  config: HttpConfig;
  /** Reported by GET /health and the OpenAPI document. */
  version: string;
  store: Store;
  catalog: RuleCatalog;
  logger: Logger;
  /** The evaluate use case, when shared with another transport; built from store and catalog otherwise. */
  evaluator?: Evaluator;
  /**
   * The session use case, when shared with another transport; else built from sessionStore (an in-process store when
   * that is absent too) and `sessionOptions`.
   */
  sessions?: SessionEvaluator;
  /** Working memory for the sessions built here; the caller closes it. */
  sessionStore?: SessionStore;
  sessionOptions?: Pick<SessionEvaluatorOptions, 'maxFacts' | 'maxBytes' | 'timestampField' | 'clock'>;
  /** Required for RULES_METRICS=prometheus; the same registry other transports count into. */
  metrics?: ServiceMetrics;
  /** Further dependencies /health/ready reports, e.g. kafka or redis. */
  readiness?: Record<string, ReadinessCheck>;
  /** Longest a request may take to arrive in full, body included (REQUEST_TIMEOUT_MS); tests shorten it. */
  requestTimeoutMs?: number;
  /** Shown by /health/ready under `details`, e.g. the Kafka consumer's state. */
  readinessDetails?: Record<string, () => unknown>;
}

function buildSessions(deps: AppDependencies, metrics: ServiceMetrics | undefined): SessionEvaluator {
  const store = deps.sessionStore;
  if (store === undefined) {
    // Only tests and embedders get here: service.ts always passes the configured store.
    deps.logger.warn('no session store given: sessions use an in-process store (single instance only)');
  }
  return new SessionEvaluator({
    catalog: deps.catalog,
    rulesets: deps.store.rulesets,
    sessions: store ?? new MemorySessionStore(),
    executions: deps.store.executions,
    maxFacts: 10_000,
    ...deps.sessionOptions,
    ...(metrics === undefined ? {} : { observer: metrics.observe }),
  });
}

/** Longest a request may take to arrive in full: 1 MiB at 70 kbit/s, or a bulk body of 256 MiB on a fast link. */
export const REQUEST_TIMEOUT_MS = 120_000;

const HEALTH_ROUTES = new Set(['/health', '/health/ready']);

export async function buildApp(deps: AppDependencies): Promise<FastifyInstance> {
  const { config } = deps;
  const loggerInstance: FastifyBaseLogger = deps.logger;
  // Set once the metrics are registered; Fastify takes the replier for pre-routing errors before that.
  let countUnrouted: CountUnrouted | undefined;
  const app = Fastify({
    loggerInstance,
    // One line per request costs more than an evaluation; failures are logged by the error handler instead.
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: (logger, bindings, options) => new LazyRequestLogger(logger, bindings, options),
    bodyLimit: config.bodyLimit,
    // Fastify turns Node's 300 s guard off: a client that stopped sending its body would hold its socket for good.
    requestTimeout: deps.requestTimeoutMs ?? REQUEST_TIMEOUT_MS,
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    // Requests arriving during shutdown get our own 503 body below, not Fastify's.
    return503OnClosing: false,
    requestIdHeader: 'x-request-id',
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    clientErrorHandler: clientErrorReplier,
    frameworkErrors: frameworkErrorReplier(config.bodyLimit, (method, status, seconds) => countUnrouted?.(method, status, seconds)),
  });
  app.setValidatorCompiler(zodValidatorCompiler);
  app.setSerializerCompiler(jsonSerializerCompiler);
  registerJsonBody(app, config.bodyLimit);
  registerErrorHandling(app, config.bodyLimit);
  answerUnroutedRequests(app.server);

  let draining = false;
  const connections = trackConnections(app.server);
  app.addHook('preClose', async () => {
    draining = true;
    connections.drain();
  });
  const authenticate = registerAuth(app, config.apiKeys);
  // One callback hook for shutdown and authentication: every hook, and a promise per hook, costs each request.
  app.addHook('onRequest', (request, reply, done) => {
    if (draining) {
      reply.header('connection', 'close');
      // The health routes answer for themselves: readiness says it is shutting down, liveness that the process runs.
      if (!HEALTH_ROUTES.has(request.routeOptions.url ?? '')) {
        done(new AppError('UNAVAILABLE', 'The service is shutting down; retry on another instance.'));
        return;
      }
    }
    done(authenticate(request, reply));
  });

  const metrics = config.metrics === 'prometheus' ? deps.metrics : undefined;
  if (config.metrics === 'prometheus' && metrics === undefined) throw new Error('RULES_METRICS=prometheus needs a ServiceMetrics');
  if (metrics !== undefined) {
    countUnrouted = registerRequestMetrics(app, metrics);
    metrics.collectProcessMetrics();
  }

  const services: HttpServices = {
    config,
    version: deps.version,
    evaluator:
      deps.evaluator ??
      new Evaluator({
        catalog: deps.catalog,
        executions: deps.store.executions,
        ...(metrics === undefined ? {} : { observer: metrics.observe }),
      }),
    admin: new RuleAdmin({ store: deps.store, catalog: deps.catalog }),
    sessions: deps.sessions ?? buildSessions(deps, metrics),
    catalog: deps.catalog,
    store: deps.store,
    metrics,
    // Readiness fails while requests that record are refused, so load balancers send them elsewhere.
    readiness: { executions: () => executionsKeepingUp({ store: deps.store, config }), ...deps.readiness },
    readinessDetails: {
      executions: () => ({ pending: deps.store.executions.pendingCount(), pending_bytes: deps.store.executions.pendingBytes() }),
      ...deps.readinessDetails,
    },
    draining: () => draining,
    bulkUnderWay: { weight: 0 },
  };

  await registerOpenApi(app, deps.version, config.apiKeys !== null);
  await app.register(healthRoutes, { services });
  await app.register(
    async (v1) => {
      v1.addHook('onRoute', refuseUndeclaredInput);
      await v1.register(evaluationRoutes, { services });
      await v1.register(executionRoutes, { services });
      await v1.register(ruleRoutes, { services });
      await v1.register(rulesetRoutes, { services });
      await v1.register(sessionRoutes, { services });
      await v1.register(auditRoutes, { services });
      if (metrics !== undefined) await v1.register(metricsRoutes, { metrics });
    },
    { prefix: '/api/v1' },
  );
  return app;
}
