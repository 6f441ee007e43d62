// Stateless evaluation: evaluate, bulk, explain, simulate and validate. Scope "evaluate".
import type { FastifyPluginAsync } from 'fastify';
import { validateCondition } from '../../../engine/index.ts';
import { AppError } from '../../../errors.ts';
import { explainRule } from '../../../evaluation/explainer.ts';
import { validateRuleset } from '../../../evaluation/ruleset-validation.ts';
import { simulate } from '../../../evaluation/simulator.ts';
import { backlogWeight } from '../../../store/index.ts';
import { sendJsonText } from '../../json-body.ts';
import {
  bulkBody,
  bulkResponse,
  evaluateBody,
  evaluationOutcomeSchema,
  explainBody,
  explanationResponse,
  simulateBody,
  simulateResponse,
  validateBody,
  validateResponse,
} from '../../schemas/evaluation.ts';
import { errorResponses } from '../../schemas/responses.ts';
import { type RouteOptions, refuseWhileBacklogged, withBulkUnderWay } from '../../services.ts';
import type { ZodTypeProvider } from '../../zod-compilers.ts';

export const evaluationRoutes: FastifyPluginAsync<RouteOptions> = async (app, { services }) => {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const config = { scope: 'evaluate' } as const;
  const tags = ['evaluation'];
  const { evaluator, catalog } = services;
  const bulkMax = services.config.bulkMax;

  routes.post(
    '/evaluate',
    {
      config,
      schema: {
        tags,
        summary: 'Evaluate one fact and record the execution',
        body: evaluateBody,
        response: { 200: evaluationOutcomeSchema, ...errorResponses(400, 401, 403, 413, 415, 503) },
      },
    },
    // Synchronous, so no promise and microtask per request. The reply is
    // the outcome's JSON, which the execution record reuses with the body's own text instead of serializing both again.
    (request, reply) => {
      refuseWhileBacklogged(services);
      const { facts, domain } = request.body;
      // The parser always keeps the text of a JSON body; serializing the body is only a fallback.
      const requestJson = request.bodyJson ?? JSON.stringify(request.body);
      sendJsonText(reply, evaluator.evaluateToJson(facts, { domain, requestJson }));
    },
  );

  routes.post(
    '/evaluate/bulk',
    {
      config,
      schema: {
        tags,
        summary: `Evaluate many facts (at most RULES_BULK_MAX) against one rules revision`,
        body: bulkBody,
        response: { 200: bulkResponse, ...errorResponses(400, 401, 403, 413, 415, 503) },
      },
      // The count is checked before the facts are validated, so an oversized batch costs nothing more.
      preValidation: async (request) => {
        const facts = (request.body as { facts?: unknown } | undefined)?.facts;
        if (Array.isArray(facts) && facts.length > bulkMax) {
          throw new AppError('PAYLOAD_TOO_LARGE', `facts holds ${facts.length} entries; at most ${bulkMax} (RULES_BULK_MAX) per request.`);
        }
      },
    },
    async (request) => {
      refuseWhileBacklogged(services);
      const { facts, domain } = request.body;
      // Each fact records one execution holding about its share of the body's bytes (UTF-8, as the backlog counts them).
      const weight = backlogWeight(facts.length, request.bodyJson === null ? 0 : Buffer.byteLength(request.bodyJson));
      return { results: await withBulkUnderWay(services, weight, () => evaluator.bulk(facts, { domain })) };
    },
  );

  routes.post(
    '/explain',
    {
      config,
      schema: {
        tags,
        summary: 'Explain why one stored rule did or did not match',
        body: explainBody,
        response: { 200: explanationResponse, ...errorResponses(400, 401, 403, 404, 413, 415) },
      },
    },
    async (request) => explainRule(catalog, request.body.rule_id, request.body.facts),
  );

  routes.post(
    '/simulate',
    {
      config,
      schema: {
        tags,
        summary: 'Evaluate against inline rules (ids 1..n) or the stored ones, persisting nothing',
        body: simulateBody,
        response: { 200: simulateResponse, ...errorResponses(400, 401, 403, 413, 415) },
      },
    },
    async (request) => simulate(catalog, request.body),
  );

  routes.post(
    '/validate',
    {
      config,
      schema: {
        tags,
        summary: 'Validate a condition DSL tree or a whole ruleset; an invalid one is a 200 with valid=false',
        body: validateBody,
        response: { 200: validateResponse, ...errorResponses(400, 401, 403, 413, 415) },
      },
    },
    async (request) => {
      if (request.body.rules !== undefined) return validateRuleset(request.body.rules);
      return validateCondition(request.body.condition_dsl);
    },
  );
};
