// Recorded executions, read back by id. Scope "evaluate".
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyPluginAsync } from 'fastify';
import { AppError } from '../../../errors.ts';
import { executionIdTime } from '../../../evaluation/execution-id.ts';
import type { ExecutionRecord } from '../../../store/index.ts';
import { executionIdParams, executionSchema } from '../../schemas/evaluation.ts';
import { errorResponses } from '../../schemas/responses.ts';
import type { RouteOptions } from '../../services.ts';
import type { ZodTypeProvider } from '../../zod-compilers.ts';

export const executionRoutes: FastifyPluginAsync<RouteOptions> = async (app, { services }) => {
  const waiting = { count: 0 };
  app.withTypeProvider<ZodTypeProvider>().get(
    '/executions/:id',
    {
      config: { scope: 'evaluate' },
      schema: {
        tags: ['evaluation'],
        summary: 'One recorded execution (readable as soon as evaluate answered)',
        params: executionIdParams,
        response: { 200: executionSchema, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const execution = await findRecorded(services, request.params.id, waiting);
      if (execution === undefined) throw new AppError('NOT_FOUND', `Execution ${request.params.id} does not exist or has expired.`);
      // The documented field order, whether the record is still pending (built by the evaluator) or read from a batch.
      return {
        execution_id: execution.execution_id,
        source: execution.source,
        domain: execution.domain,
        facts: execution.facts,
        fired_rules: execution.fired_rules,
        actions: execution.actions,
        latency_ms: execution.latency_ms,
        revision: execution.revision,
        created_at: execution.created_at,
      };
    },
  );
};

// Another instance's record reaches the database within its next batch write (every 50 ms): a fresh id is looked up
// again for up to 700 ms before it is answered 404, so a client behind a load balancer can read its execution at once.
const FRESH_ID_MS = 2_000;
const RETRY_DELAYS_MS = [100, 200, 400];
// Lookups waiting at once: past this, a fresh id not found is answered 404 at once (fabricated ids cannot pile up).
export const MAX_WAITING_LOOKUPS = 1_000;

/** The execution, looked up again for a while when its id is fresh; `waiting` counts the lookups doing so. */
export async function findRecorded(
  services: Pick<RouteOptions['services'], 'store'>,
  id: string,
  waiting: { count: number },
): Promise<ExecutionRecord | undefined> {
  let found = await services.store.executions.get(id);
  const idMs = executionIdTime(id);
  if (found !== undefined || idMs === undefined || Math.abs(Date.now() - idMs) >= FRESH_ID_MS) return found;
  if (waiting.count >= MAX_WAITING_LOOKUPS) return undefined;
  waiting.count += 1;
  try {
    for (const delay of RETRY_DELAYS_MS) {
      await sleep(delay);
      found = await services.store.executions.get(id);
      if (found !== undefined || Math.abs(Date.now() - idMs) >= FRESH_ID_MS) break;
    }
  } finally {
    waiting.count -= 1;
  }
  return found;
}
