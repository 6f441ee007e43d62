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
  /** What the bulk requests under way will add to the execution backlog, counted against it before they land. */
  readonly bulkUnderWay: { weight: number };
}

/** The execution backlog is under RULES_EXECUTION_BACKLOG_MAX, in records or bytes (readiness, and the check below). */
export function executionsKeepingUp(services: Pick<HttpServices, 'store' | 'config'>): boolean {
  return executionBacklog(services.store.executions) < services.config.executionBacklogMax;
}

/**
 * UNAVAILABLE when the execution records waiting to be written, with those the bulk requests under way will add, pass
 * RULES_EXECUTION_BACKLOG_MAX (in records, or in bytes at 512 a record): a request that would record one more is
 * refused (and may be retried) rather than accepted into a backlog that only grows. Counting the bulks under way keeps
 * concurrent ones from all passing the check before any has recorded: the bound is passed by one request at most.
 */
export function refuseWhileBacklogged(services: Pick<HttpServices, 'store' | 'config' | 'bulkUnderWay'>): void {
  const { executions } = services.store;
  const backlog = executionBacklog(executions);
  const underWay = services.bulkUnderWay.weight;
  if (backlog + underWay < services.config.executionBacklogMax) return;
  const waiting = `${executions.pendingCount()} waiting, ${executions.pendingBytes()} bytes`;
  // Only the bulks under way pass the limit: the database keeps up, readiness stays up, and a retry soon will pass.
  if (backlog < services.config.executionBacklogMax) {
    throw new AppError(
      'UNAVAILABLE',
      `Bulk requests under way will record ${underWay} executions, which with those waiting to be written (${waiting}) pass RULES_EXECUTION_BACKLOG_MAX; try again shortly.`,
    );
  }
  throw new AppError(
    'UNAVAILABLE',
    `Execution records are not being written (${waiting}${underWay > 0 ? `, ${underWay} more from bulk requests under way` : ''}; the database is behind or away); try again later.`,
  );
}

/**
 * Runs a bulk request's evaluations with its records' weight counted as under way (see refuseWhileBacklogged) until it
 * answers; they count twice while it records them, which only errs on the side of refusing.
 */
export async function withBulkUnderWay<T>(
  services: Pick<HttpServices, 'bulkUnderWay'>,
  weight: number,
  work: () => Promise<T>,
): Promise<T> {
  services.bulkUnderWay.weight += weight;
  try {
    return await work();
  } finally {
    services.bulkUnderWay.weight -= weight;
  }
}

export interface RouteOptions {
  services: HttpServices;
}
