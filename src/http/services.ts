// What the routes work with: the use cases and the few store parts read directly.
import type { HttpConfig } from '../config.ts';
import { AppError } from '../errors.ts';
import type { Evaluator } from '../evaluation/evaluator.ts';
import type { RuleAdmin } from '../evaluation/rule-admin.ts';
import type { RuleCatalog } from '../evaluation/rule-catalog.ts';
import type { ServiceMetrics } from '../evaluation/service-metrics.ts';
import type { SessionEvaluator } from '../evaluation/session-evaluator.ts';
import { executionBacklog } from '../store/index.ts';
import type { Store } from '../store/types.ts';

/** A dependency check for /health/ready: true when the dependency can serve. */
export type ReadinessCheck = () => boolean | Promise<boolean>;

export interface HttpServices {
  readonly config: HttpConfig;
  readonly version: string;
  readonly evaluator: Evaluator;
  readonly admin: RuleAdmin;
  readonly sessions: SessionEvaluator;
  readonly catalog: Pick<RuleCatalog, 'engine' | 'revision'>;
  readonly store: Pick<Store, 'executions' | 'audit' | 'ping'>;
  readonly metrics: ServiceMetrics | undefined;
  readonly readiness: Readonly<Record<string, ReadinessCheck>>;
  /** What /health/ready shows of a dependency beyond up or down, e.g. the Kafka consumer's partitions and state. */
  readonly readinessDetails: Readonly<Record<string, () => unknown>>;
  /** True once shutdown began: readiness fails so load balancers stop sending traffic. */
  readonly draining: () => boolean;
}

/** The execution backlog is under RULES_EXECUTION_BACKLOG_MAX, in records or bytes (readiness, and the check below). */
export function executionsKeepingUp(services: Pick<HttpServices, 'store' | 'config'>): boolean {
  return executionBacklog(services.store.executions) < services.config.executionBacklogMax;
}

/**
 * UNAVAILABLE when the execution records waiting to be written pass RULES_EXECUTION_BACKLOG_MAX (in records, or in
 * bytes at 512 a record): a request that would record one more is refused (and may be retried) rather than accepted
 * into a backlog that only grows.
 */
export function refuseWhileBacklogged(services: Pick<HttpServices, 'store' | 'config'>): void {
  if (executionsKeepingUp(services)) return;
  const { executions } = services.store;
  throw new AppError(
    'UNAVAILABLE',
    `Execution records are not being written (${executions.pendingCount()} waiting, ${executions.pendingBytes()} bytes; the database is behind or away); try again later.`,
  );
}

export interface RouteOptions {
  services: HttpServices;
}
