// Request and response bodies of evaluate, bulk, explain, simulate, validate and executions.
import { z } from 'zod';
import { evaluationResultSchema, explanationSchema, validationResultSchema } from '../../contracts/evaluation.ts';
import { isCommonDomain, ruleFieldSchemas } from '../../contracts/rule.ts';
import { withFastAccept } from '../zod-compilers.ts';
import {
  anyConditionDslField,
  components,
  conditionDslField,
  documentRefinement,
  domainField,
  factsSchema,
  idField,
  isCommonFacts,
  timestampField,
} from './common.ts';

/** Most rules one simulate or validate request may carry. */
export const MAX_INLINE_RULES = 1_000;

export const evaluateBody = withFastAccept(
  z.strictObject({ facts: factsSchema, domain: domainField.optional() }).register(components, { id: 'EvaluateRequest' }),
  isCommonEvaluateBody,
);

/** True for an evaluate body the schema accepts unchanged; the hot path skips zod for it. For parsed JSON only. */
export function isCommonEvaluateBody(body: unknown): boolean {
  if (!hasOnlyFactsAndDomain(body)) return false;
  return (body.domain === undefined || isCommonDomain(body.domain)) && isCommonFacts(body.facts);
}

function hasOnlyFactsAndDomain(body: unknown): body is { facts?: unknown; domain?: unknown } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return false;
  for (const key in body) {
    if (key !== 'facts' && key !== 'domain') return false;
  }
  return true;
}

export const evaluationOutcomeSchema = evaluationResultSchema
  .extend({
    execution_id: z.string().describe('UUID v7 of the recorded execution; GET /api/v1/executions/{id} reads it back.'),
    revision: z.number().int().describe('Rules revision the facts were evaluated against.'),
  })
  .register(components, { id: 'EvaluationOutcome' });

export const bulkBody = withFastAccept(
  z
    .strictObject({
      facts: z.array(factsSchema).describe('Facts to evaluate, at most RULES_BULK_MAX (default 10,000).'),
      domain: domainField.optional(),
    })
    .register(components, { id: 'BulkEvaluateRequest' }),
  isCommonBulkBody,
);

/** True for a bulk body the schema accepts unchanged, so its facts are not copied one by one. For parsed JSON only. */
export function isCommonBulkBody(body: unknown): boolean {
  if (!hasOnlyFactsAndDomain(body)) return false;
  const { facts, domain } = body;
  if (!Array.isArray(facts) || !(domain === undefined || isCommonDomain(domain))) return false;
  for (let index = 0; index < facts.length; index++) {
    if (!isCommonFacts(facts[index])) return false;
  }
  return true;
}

export const bulkResponse = z
  .object({ results: z.array(evaluationOutcomeSchema).describe('One result per fact, in input order.') })
  .register(components, { id: 'BulkEvaluateResponse' });

export const explainBody = z.strictObject({ rule_id: idField, facts: factsSchema }).register(components, { id: 'ExplainRequest' });
export const explanationResponse = explanationSchema
  .extend({
    condition_dsl: conditionDslField,
    revision: z.number().int().describe('Rules revision the rule was explained at (as results name theirs).'),
  })
  .register(components, { id: 'Explanation' });

export const simulatedRuleSchema = z.strictObject({
  name: ruleFieldSchemas.name,
  condition_dsl: conditionDslField,
  action: ruleFieldSchemas.action,
  // The bounds a stored rule has: a preview of a rule that could never be stored would mislead.
  priority: ruleFieldSchemas.priority.optional(),
  domain: ruleFieldSchemas.domain.optional(),
});

export const simulateBody = z
  .strictObject({
    rules: z
      .array(simulatedRuleSchema)
      .min(1)
      .max(MAX_INLINE_RULES)
      .optional()
      .describe(
        "Rules to simulate, given ids 1..n in input order; the stored rules when absent. Their regex patterns may hold at most 2,000 characters in all, counted as docs/dsl.md counts a pattern's size.",
      ),
    facts: factsSchema,
    domain: domainField.optional(),
  })
  .register(components, { id: 'SimulateRequest' });

export const simulateResponse = evaluationResultSchema
  .extend({ revision: z.number().int().nullable().describe('Stored rules revision used; null when rules were given inline.') })
  .register(components, { id: 'SimulateResponse' });

export const validateBody = documentRefinement(
  z
    .strictObject({
      condition_dsl: anyConditionDslField.optional(),
      rules: z
        .array(z.unknown())
        .max(MAX_INLINE_RULES)
        .optional()
        .describe('A whole ruleset: each rule is checked, and names must be unique within a domain.'),
    })
    .refine((body) => (body.condition_dsl === undefined) !== (body.rules === undefined), 'send exactly one of condition_dsl or rules')
    .register(components, { id: 'ValidateRequest' }),
  { oneOf: [{ required: ['condition_dsl'] }, { required: ['rules'] }] },
);

export const validateResponse = validationResultSchema.register(components, { id: 'ValidationResult' });

export const executionIdParams = z.strictObject({
  id: z.uuid('id must be a UUID').describe('execution_id returned by evaluate or bulk.'),
});

export const executionSchema = z
  .object({
    execution_id: z.string(),
    source: z.enum(['http', 'bulk', 'kafka', 'session']),
    domain: z.string().nullable(),
    facts: z.unknown(),
    fired_rules: z.array(z.number().int()),
    actions: z.array(z.string()),
    latency_ms: z.number(),
    revision: z.number().int(),
    created_at: timestampField,
  })
  .register(components, { id: 'Execution' });
