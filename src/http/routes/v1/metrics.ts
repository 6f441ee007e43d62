// Prometheus scrape endpoint, registered only with RULES_METRICS=prometheus. Scope "admin".
import type { FastifyPluginAsync } from 'fastify';
import type { ServiceMetrics } from '../../../evaluation/service-metrics.ts';

export const metricsRoutes: FastifyPluginAsync<{ metrics: ServiceMetrics }> = async (app, { metrics }) => {
  app.get(
    '/metrics',
    {
      config: { scope: 'admin' },
      schema: { tags: ['metrics'], summary: 'Metrics in the Prometheus text format (RULES_METRICS=prometheus)', produces: ['text/plain'] },
    },
    async (_request, reply) => reply.type(metrics.contentType).send(await metrics.text()),
  );
};
