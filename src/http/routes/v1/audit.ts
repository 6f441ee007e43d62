// The audit trail of rule and ruleset changes, newest first, and its hash-chain check. Scope "admin".
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { sendPage } from '../../paging.ts';
import { auditEntrySchema, auditQuery, auditVerifySchema } from '../../schemas/audit.ts';
import { errorResponses } from '../../schemas/responses.ts';
import type { RouteOptions } from '../../services.ts';
import type { ZodTypeProvider } from '../../zod-compilers.ts';

export const auditRoutes: FastifyPluginAsync<RouteOptions> = async (app, { services }) => {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const config = { scope: 'admin' } as const;
  const tags = ['audit'];
  const { audit } = services.store;

  routes.get(
    '/audit',
    {
      config,
      schema: {
        tags,
        summary: 'Audit entries, newest first, filtered by entity, action and time; paged like rules',
        querystring: auditQuery,
        response: { 200: z.array(auditEntrySchema), ...errorResponses(400, 401, 403) },
      },
    },
    async (request, reply) => sendPage(request, reply, await audit.list(request.query)),
  );

  routes.get(
    '/audit/verify',
    {
      config,
      schema: {
        tags,
        summary: 'Recompute the hash chain: valid is false if any entry was altered',
        response: { 200: auditVerifySchema, ...errorResponses(401, 403) },
      },
    },
    async () => audit.verify(),
  );
};
