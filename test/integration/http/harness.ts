// Builds the HTTP app on a fresh store for one test file; every request goes through app.inject(), no port is opened.
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { loadConfig } from '../../../src/config.ts';
import { EngineMetrics } from '../../../src/engine/index.ts';
import { RuleCatalog } from '../../../src/evaluation/rule-catalog.ts';
import { ServiceMetrics } from '../../../src/evaluation/service-metrics.ts';
import { buildApp } from '../../../src/http/app.ts';
import type { ReadinessCheck } from '../../../src/http/services.ts';
import { createLogger, type Logger } from '../../../src/logger.ts';
import type { SessionStore } from '../../../src/sessions/session-store.ts';
import type { SqlStore } from '../../../src/store/index.ts';
import { openTestStore, type StoreKind } from '../../helpers/databases.ts';

export const STORE_KINDS: readonly StoreKind[] = ['pglite', 'postgres'];

export interface TestApp {
  app: FastifyInstance;
  store: SqlStore;
  catalog: RuleCatalog;
  cleanup(): Promise<void>;
}

export interface TestAppOptions {
  env?: Record<string, string>;
  readiness?: Record<string, ReadinessCheck>;
  readinessDetails?: Record<string, () => unknown>;
  /** Working memory for sessions; an in-process store when absent. The test closes it. */
  sessionStore?: SessionStore;
  /** Session clock (epoch ms); the wall clock when absent. */
  sessionClock?: () => number;
  /** Longest a request may take to arrive in full; the service's REQUEST_TIMEOUT_MS when absent. */
  requestTimeoutMs?: number;
  /** Where the app logs; nowhere when absent. */
  logger?: Logger;
}

export async function startTestApp(kind: StoreKind, options: TestAppOptions = {}): Promise<TestApp> {
  const { store, cleanup } = await openTestStore(kind);
  try {
    return await startTestAppOn(store, cleanup, options);
  } catch (error) {
    await cleanup();
    throw error;
  }
}

/** The app on a store the caller opened (e.g. a second instance on one database); cleanup() ends with storeCleanup. */
export async function startTestAppOn(store: SqlStore, storeCleanup: () => Promise<void>, options: TestAppOptions = {}): Promise<TestApp> {
  const config = loadConfig(options.env ?? {});
  const engineMetrics = new EngineMetrics();
  const catalog = await RuleCatalog.open({ rules: store.rules, metrics: engineMetrics });
  const metrics = new ServiceMetrics({ engineMetrics, engine: () => catalog.engine });
  const app = await buildApp({
    config: config.http,
    version: '0.0.0-test',
    store,
    catalog,
    logger: options.logger ?? createLogger('silent'),
    metrics,
    ...(options.readiness === undefined ? {} : { readiness: options.readiness }),
    ...(options.readinessDetails === undefined ? {} : { readinessDetails: options.readinessDetails }),
    ...(options.sessionStore === undefined ? {} : { sessionStore: options.sessionStore }),
    ...(options.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: options.requestTimeoutMs }),
    sessionOptions: {
      maxFacts: config.sessions.maxFacts,
      maxBytes: config.sessions.maxBytes,
      timestampField: config.sessions.timestampField,
      ...(options.sessionClock === undefined ? {} : { clock: options.sessionClock }),
    },
  });
  await app.ready();
  return {
    app,
    store,
    catalog,
    async cleanup() {
      await app.close();
      await storeCleanup();
    },
  };
}

/** A JSON request: the body is serialized and sent with Content-Type: application/json. */
export function json(
  app: FastifyInstance,
  method: InjectOptions['method'],
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  return app.inject({
    method,
    url,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
}

export const gt = (field: string, value: number) => ({ type: 'condition', field, op: '>', value });
export const eq = (field: string, value: string | number | boolean) => ({ type: 'condition', field, op: '==', value });

export function ruleDraft(name: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { name, condition_dsl: gt('amount', 100), action: `act_${name}`, ...overrides };
}
