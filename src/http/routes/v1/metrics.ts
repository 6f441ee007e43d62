// Prometheus scrape endpoint, registered only with RULES_METRICS=prometheus. Scope "admin".
import type { FastifyPluginAsync } from 'fastify';
import type { ServiceMetrics } from '../../../evaluation/service-metrics.ts';
import { errorResponses } from '../../schemas/responses.ts';

export const metricsRoutes: FastifyPluginAsync<{ metrics: ServiceMetrics }> = async (app, { metrics }) => {
  app.get(
    '/metrics',
    {
      config: { scope: 'admin' },
      schema: {
        tags: ['metrics'],
        summary: 'Metrics in the Prometheus text format (RULES_METRICS=prometheus)',
        response: {
          200: {
            description: 'Prometheus text exposition format 0.0.4.',
            content: { 'text/plain; version=0.0.4; charset=utf-8': { schema: { type: 'string' } } },
          },
          ...errorResponses(401, 403),
        },
      },
    },
    async (_request, reply) => reply.type(metrics.contentType).send(await metrics.text()),
  );
};
