// Stateful sessions: facts accumulate in a working memory and the session's rules are evaluated over it. Scope "evaluate".
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { errorResponses } from '../../schemas/responses.ts';
import {
  addFactBody,
  createSessionBody,
  sessionDetailsSchema,
  sessionEvaluationSchema,
  sessionExplainBody,
  sessionExplanationSchema,
  sessionFactParams,
  sessionParams,
  sessionSchema,
} from '../../schemas/sessions.ts';
import { type RouteOptions, refuseWhileBacklogged } from '../../services.ts';
import type { ZodTypeProvider } from '../../zod-compilers.ts';

export const sessionRoutes: FastifyPluginAsync<RouteOptions> = async (app, { services }) => {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const config = { scope: 'evaluate' } as const;
  const tags = ['sessions'];
  const { sessions } = services;

  routes.post(
    '/sessions',
    {
      config,
      schema: {
        tags,
        summary: "Open a session over a ruleset's rules",
        body: createSessionBody,
        response: { 201: sessionSchema, ...errorResponses(400, 401, 403, 404, 413, 415, 503) },
      },
    },
    async (request, reply) => {
      const session = await sessions.create(request.body.ruleset_id, request.body.ttl_seconds);
      return reply.code(201).header('location', `/api/v1/sessions/${session.id}`).send(session);
    },
  );

  routes.post(
    '/sessions/:id/facts',
    {
      config,
      schema: {
        tags,
        summary: 'Add a fact (the same fact_id replaces it) and evaluate the session',
        params: sessionParams,
        body: addFactBody,
        response: { 200: sessionEvaluationSchema, ...errorResponses(400, 401, 403, 404, 409, 413, 415, 503) },
      },
    },
    async (request) => {
      refuseWhileBacklogged(services);
      return sessions.addFact(request.params.id, request.body.fact_id, request.body.event);
    },
  );

  routes.get(
    '/sessions/:id',
    {
      config,
      schema: {
        tags,
        summary: 'The session: its facts, the rules active after its latest write, and when it expires',
        params: sessionParams,
        response: { 200: sessionDetailsSchema, ...errorResponses(400, 401, 403, 404, 503) },
      },
    },
    async (request) => sessions.get(request.params.id),
  );

  routes.post(
    '/sessions/:id/explain',
    {
      config,
      schema: {
        tags,
        summary: "Explain why one of the session's rules did or did not hold, with the aggregates of its latest write",
        params: sessionParams,
        body: sessionExplainBody,
        response: { 200: sessionExplanationSchema, ...errorResponses(400, 401, 403, 404, 413, 415, 503) },
      },
    },
    async (request) => sessions.explain(request.params.id, request.body.rule_id, request.body.fact_id),
  );

  routes.delete(
    '/sessions/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Delete the session and its working memory',
        params: sessionParams,
        response: { 204: z.void().describe('Deleted; no body.'), ...errorResponses(400, 401, 403, 404, 503) },
      },
    },
    async (request, reply) => {
      await sessions.delete(request.params.id);
      return reply.code(204).send();
    },
  );

  routes.delete(
    '/sessions/:id/facts/:fact_id',
    {
      config,
      schema: {
        tags,
        summary: 'Retract a fact and evaluate the session again',
        params: sessionFactParams,
        response: { 200: sessionEvaluationSchema, ...errorResponses(400, 401, 403, 404, 503) },
      },
    },
    async (request) => {
      refuseWhileBacklogged(services);
      return sessions.retractFact(request.params.id, request.params.fact_id);
    },
  );
};
