// Recorded executions, read back by id. Scope "evaluate".
import type { FastifyPluginAsync } from 'fastify';
import { AppError } from '../../../errors.ts';
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
      const execution = await services.store.executions.get(request.params.id);
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
