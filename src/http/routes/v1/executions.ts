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
      const execution = await findRecorded(services, request.params.id);
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

async function findRecorded(services: RouteOptions['services'], id: string): Promise<ExecutionRecord | undefined> {
  let found = await services.store.executions.get(id);
  const idMs = executionIdTime(id);
  for (const delay of RETRY_DELAYS_MS) {
    if (found !== undefined || idMs === undefined || Math.abs(Date.now() - idMs) >= FRESH_ID_MS) break;
    await sleep(delay);
    found = await services.store.executions.get(id);
  }
  return found;
}
