// Rule management: create, list, read, replace, patch, delete, versions. Scope "admin".
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { ifMatchVersions, withEntityTag } from '../../entity-tags.ts';
import { sendPage } from '../../paging.ts';
import { idParams } from '../../schemas/common.ts';
import { errorResponses } from '../../schemas/responses.ts';
import { ruleBody, ruleListQuery, rulePatchBody, ruleVersionSchema, storedRuleSchema } from '../../schemas/rules.ts';
import type { RouteOptions } from '../../services.ts';
import type { ZodTypeProvider } from '../../zod-compilers.ts';

export const ruleRoutes: FastifyPluginAsync<RouteOptions> = async (app, { services }) => {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const config = { scope: 'admin' } as const;
  const tags = ['rules'];
  const { admin } = services;

  routes.post(
    '/rules',
    {
      config,
      schema: {
        tags,
        summary: 'Create a rule (version 1); the engine uses it at once',
        entityTag: 'etag',
        body: ruleBody,
        response: { 201: storedRuleSchema, ...errorResponses(400, 401, 403, 409, 413, 415) },
      },
    },
    async (request, reply) => {
      const rule = await admin.createRule(request.body, request.principal.name);
      return reply.code(201).header('location', `/api/v1/rules/${rule.id}`).send(withEntityTag(reply, rule));
    },
  );

  routes.get(
    '/rules',
    {
      config,
      schema: {
        tags,
        summary: 'List rules, oldest first; a Link rel="next" header points at the next page',
        querystring: ruleListQuery,
        response: { 200: z.array(storedRuleSchema), ...errorResponses(400, 401, 403) },
      },
    },
    async (request, reply) => sendPage(request, reply, await admin.listRules(request.query)),
  );

  routes.get(
    '/rules/:id',
    {
      config,
      schema: {
        tags,
        summary: 'One rule; its ETag is its version, for If-Match on a later change',
        entityTag: 'etag',
        params: idParams,
        response: { 200: storedRuleSchema, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => withEntityTag(reply, await admin.getRule(request.params.id)),
  );

  routes.put(
    '/rules/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Replace a rule (version + 1); omitted optional fields take their defaults; If-Match: "<version>" guards it',
        entityTag: 'if-match',
        params: idParams,
        body: ruleBody,
        response: { 200: storedRuleSchema, ...errorResponses(400, 401, 403, 404, 409, 412, 413, 415) },
      },
    },
    async (request, reply) =>
      withEntityTag(reply, await admin.replaceRule(request.params.id, request.body, request.principal.name, ifMatchVersions(request))),
  );

  routes.patch(
    '/rules/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Change some fields of a rule (version + 1); If-Match: "<version>" guards it',
        entityTag: 'if-match',
        params: idParams,
        body: rulePatchBody,
        response: { 200: storedRuleSchema, ...errorResponses(400, 401, 403, 404, 409, 412, 413, 415) },
      },
    },
    async (request, reply) =>
      withEntityTag(reply, await admin.updateRule(request.params.id, request.body, request.principal.name, ifMatchVersions(request))),
  );

  routes.delete(
    '/rules/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Delete a rule; its versions and audit entries remain; If-Match: "<version>" guards it',
        entityTag: 'if-match',
        params: idParams,
        response: { 204: z.void().describe('Deleted; no body.'), ...errorResponses(400, 401, 403, 404, 412) },
      },
    },
    async (request, reply) => {
      await admin.deleteRule(request.params.id, request.principal.name, ifMatchVersions(request));
      return reply.code(204).send();
    },
  );

  routes.get(
    '/rules/:id/versions',
    {
      config,
      schema: {
        tags,
        summary: 'Every version of a rule, oldest first (also after it was deleted)',
        params: idParams,
        response: { 200: z.array(ruleVersionSchema), ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => admin.ruleVersions(request.params.id),
  );
};
