// Request and response bodies of stateful sessions.
import { z } from 'zod';
import { DEFAULT_TTL_SECONDS, MAX_TTL_SECONDS } from '../../sessions/session-limits.ts';
import { components, documentRefinement, factsSchema, idField, timestampField } from './common.ts';
import { explanationResponse } from './evaluation.ts';

const STORE_ID = /^[A-Za-z0-9._:-]{1,200}$/;

const factIdField = documentRefinement(
  z
    .string()
    .regex(STORE_ID, "fact_id must be 1-200 characters of letters, digits, '.', '_', ':' or '-'")
    // URLs drop '.' and '..' path segments: such a fact could never be retracted.
    .refine((id) => !/^\.+$/.test(id), "fact_id must not be made of dots only ('.' and '..' cannot be sent in a URL path)")
    .describe(
      "Id of the fact within the session: 1-200 letters, digits, '.', '_', ':' or '-', not dots only. Re-using one replaces its fact.",
    ),
  { not: { pattern: '^\\.+$' } },
);

export const createSessionBody = z
  .strictObject({
    ruleset_id: idField.describe('The session evaluates the enabled rules of this ruleset (its domain).'),
    ttl_seconds: z
      .number()
      .int('ttl_seconds must be a whole number of seconds')
      .min(1, 'ttl_seconds must be at least 1')
      .max(MAX_TTL_SECONDS, `ttl_seconds must be at most ${MAX_TTL_SECONDS} (7 days)`)
      .optional()
      .describe(
        `Idle time before the session expires: it lives at least this long past every write, at most ttl / 16 more (docs/sessions.md); default ${DEFAULT_TTL_SECONDS} (one hour).`,
      ),
  })
  .register(components, { id: 'CreateSessionRequest' });

const sessionFields = {
  id: z.string().describe('Session id, used in the paths below.'),
  ruleset_id: idField.nullable().describe('Null for a session a Kafka stream created over a domain.'),
  domain: z.string().describe("The ruleset's domain: the rules the session evaluates."),
  created_at: timestampField,
  expires_at: timestampField.describe('When the session expires unless written to again.'),
  fact_count: z.number().int().describe('Facts in the working memory.'),
};

export const sessionSchema = z.object(sessionFields).register(components, { id: 'Session' });

const sessionAggregateSchema = z
  .object({
    rule_id: z.number().int().describe('Rule whose condition holds the accumulate node.'),
    accumulator: z.string().describe('The node as explain renders it, e.g. `count(type == "login_failed") over 600s`.'),
    value: z
      .number()
      .nullable()
      .describe(
        'Its value as of aggregates_as_of; null for avg, min or max of nothing, and for a sum or avg past the double ' +
          'range (session explain shows it as Infinity). A node added or changed since then has no contributions yet: ' +
          '0 for count and sum, null otherwise.',
      ),
  })
  .register(components, { id: 'SessionAggregate' });

export const sessionDetailsSchema = z
  .object({
    ...sessionFields,
    facts: z.record(z.string(), z.unknown()).describe('The working memory: fact by fact_id.'),
    active_rules: z.array(z.number().int()).describe('Rules that held after the latest write, in fired order.'),
    version: z.number().int().describe('Bumped by every add or retract.'),
    aggregates: z
      .array(sessionAggregateSchema)
      .describe("One entry per accumulate node of the session's current rules, in rule order then node order."),
    aggregates_as_of: timestampField.describe(
      'When the latest write evaluated these values (its windows ended then); created_at before any write. A GET evicts nothing.',
    ),
  })
  .register(components, { id: 'SessionDetails' });

export const addFactBody = z
  .strictObject({
    fact_id: factIdField,
    event: factsSchema.describe('The fact: a JSON object. Its event time is read from RULES_SESSION_TIMESTAMP_FIELD (default timestamp).'),
  })
  .register(components, { id: 'AddFactRequest' });

export const sessionEvaluationSchema = z
  .object({
    session_id: z.string(),
    fact_id: z.string(),
    execution_id: z.string().describe('UUID v7 of the recorded execution (source "session").'),
    fired_rules: z.array(z.number().int()).describe('Every rule of the session that holds now: priority descending, then id ascending.'),
    actions: z.array(z.string()).describe('Distinct actions of the fired rules, in fired_rules order.'),
    latency_ms: z.number().describe('Time of the whole write (working memory and evaluation), in milliseconds.'),
    activated: z.array(z.number().int()).describe('Rules that hold now and did not after the previous write.'),
    deactivated: z.array(z.number().int()).describe('Rules that held after the previous write and no longer do.'),
    fact_count: z.number().int().describe('Facts in the working memory after this write.'),
    revision: z.number().int().describe('Rules revision the session was evaluated against.'),
    replaced: z.boolean().describe('True when an add replaced the fact with the same fact_id; false for a retract.'),
    duplicate: z
      .boolean()
      .describe(
        'True when an add re-sent the identical fact under a fact_id already held: nothing was applied again and ' +
          'activated/deactivated are the change the first add caused. False for a retract.',
      ),
  })
  .register(components, { id: 'SessionEvaluation' });

export const sessionExplainBody = z
  .strictObject({
    rule_id: idField.describe("The rule to explain; it must belong to the session's domain."),
    fact_id: factIdField
      .optional()
      .describe('A fact of the working memory that ordinary conditions are checked against; omitted: the empty fact {}.'),
  })
  .register(components, { id: 'SessionExplainRequest' });

export const sessionExplanationSchema = explanationResponse
  .extend({
    session_id: z.string(),
    fact_id: z
      .string()
      .nullable()
      .describe('The fact ordinary conditions were checked against; null: the empty fact {}, as a retraction evaluates them.'),
    aggregates_as_of: timestampField.describe(
      'When the latest write evaluated the aggregates accumulate nodes were compared with (as GET shows them); created_at before any write.',
    ),
  })
  .register(components, { id: 'SessionExplanation' });

const sessionIdField = z.string().min(1).max(200).describe('Session id returned by POST /api/v1/sessions.');

export const sessionParams = z.strictObject({ id: sessionIdField });

export const sessionFactParams = z.strictObject({ id: sessionIdField, fact_id: factIdField });
