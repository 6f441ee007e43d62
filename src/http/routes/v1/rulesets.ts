// Rulesets: named views of one domain's rules. Scope "admin".
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { sendPage } from '../../paging.ts';
import { idParams, pageQuery } from '../../schemas/common.ts';
import { errorResponses } from '../../schemas/responses.ts';
import { rulesetBody, rulesetSchema } from '../../schemas/rules.ts';
import type { RouteOptions } from '../../services.ts';
import type { ZodTypeProvider } from '../../zod-compilers.ts';

export const rulesetRoutes: FastifyPluginAsync<RouteOptions> = async (app, { services }) => {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const config = { scope: 'admin' } as const;
  const tags = ['rulesets'];
  const { admin } = services;

  routes.post(
    '/rulesets',
    {
      config,
      schema: {
        tags,
        summary: 'Create a ruleset',
        body: rulesetBody,
        response: { 201: rulesetSchema, ...errorResponses(400, 401, 403, 409, 413, 415) },
      },
    },
    async (request, reply) => {
      const ruleset = await admin.createRuleset(request.body, request.principal.name);
      return reply.code(201).header('location', `/api/v1/rulesets/${ruleset.id}`).send(ruleset);
    },
  );

  routes.get(
    '/rulesets',
    {
      config,
      schema: {
        tags,
        summary: 'List rulesets, oldest first; a Link rel="next" header points at the next page',
        querystring: pageQuery,
        response: { 200: z.array(rulesetSchema), ...errorResponses(400, 401, 403) },
      },
    },
    async (request, reply) => sendPage(request, reply, await admin.listRulesets(request.query)),
  );

  routes.get(
    '/rulesets/:id',
    {
      config,
      schema: {
        tags,
        summary: 'One ruleset with its rule count and the current revision',
        params: idParams,
        response: { 200: rulesetSchema, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => admin.getRuleset(request.params.id),
  );
};
