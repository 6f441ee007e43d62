// The messages the Kafka pipeline reads and writes: facts in, results out, dead letters aside, rule changes broadcast.
import { z } from 'zod';
import { factLimitProblem } from './json-depth.ts';
import { ruleFieldSchemas } from './rule.ts';

// Avro writers send null for an absent optional field, so null means "not given" here.
const optionalText = (max: number) => z.string().min(1).max(max).nullish();

/** The value of a message on the facts topic (JSON, or Avro / JSON Schema through the schema registry). */
export const factMessageSchema = z
  .strictObject({
    facts: z
      .record(z.string(), z.unknown())
      .superRefine((facts, ctx) => {
        const problem = factLimitProblem(facts);
        if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
      })
      .describe('The fact: an object of named fields, as in POST /api/v1/evaluate.'),
    domain: ruleFieldSchemas.domain.nullish().describe("Only this domain's rules are evaluated; every domain when absent, as over HTTP."),
    session_id: optionalText(200).describe(
      'Adds the fact to this session (POST /api/v1/sessions) and publishes the session result; the session evaluates its ' +
        "ruleset's domain, so domain must then be absent. Unknown or expired: dead letter SESSION_NOT_FOUND.",
    ),
    fact_id: optionalText(200).describe(
      'The fact id within the session (same id replaces the fact; the identical fact again is a duplicate). Absent: ' +
        'kafka:<topic>:<partition>:<offset>, so a redelivered message is a duplicate of its own fact instead of counting twice.',
    ),
  })
  .describe('A fact to evaluate, read from the facts topic.');
export type FactMessage = z.output<typeof factMessageSchema>;

/** Where an input message was read; offsets are int64 and travel as decimal strings. */
export const sourcePositionSchema = z.strictObject({
  topic: z.string(),
  partition: z.number().int().min(0),
  offset: z.string().regex(/^\d+$/, 'offset must be a decimal string'),
});
export type SourcePosition = z.infer<typeof sourcePositionSchema>;

/** The value of a message on the results topic; its key is the input key. */
export const resultMessageSchema = z
  .strictObject({
    execution_id: z.string().describe('Id of the recorded execution: GET /api/v1/executions/{id}.'),
    fired_rules: z.array(z.number().int()).describe('Ids of the rules that fired: priority descending, then id ascending.'),
    actions: z.array(z.string()).describe('Distinct actions of the fired rules, in fired_rules order.'),
    latency_ms: z.number().describe('Evaluation time in milliseconds.'),
    domain: z.string().nullable().describe('The domain that was evaluated; null when every domain was.'),
    revision: z.number().int().min(0).describe('The rule revision the evaluation used.'),
    source: sourcePositionSchema.describe('The input message this result answers.'),
  })
  .describe('The evaluation of one fact message, written to the results topic.');
export type ResultMessage = z.infer<typeof resultMessageSchema>;

/** The value of a results-topic message answering a session fact (session_id given, or KAFKA_STREAMING); keyed by the input key. */
export const sessionResultMessageSchema = z
  .strictObject({
    session_id: z.string().describe('The session the fact was added to; stream:<domain>:<key> for a streaming key.'),
    fact_id: z.string().describe('The fact id it was stored under.'),
    execution_id: z.string().describe('Id of the recorded execution (source "session"): GET /api/v1/executions/{id}.'),
    fired_rules: z.array(z.number().int()).describe('Every rule of the session that holds now, in fired order.'),
    actions: z.array(z.string()).describe('Distinct actions of the fired rules, in fired_rules order.'),
    activated: z.array(z.number().int()).describe('Rules in fired_rules that did not hold after the previous write.'),
    deactivated: z.array(z.number().int()).describe('Rules that held after the previous write and no longer do.'),
    fact_count: z.number().int().min(0).describe('Facts in the working memory after this write.'),
    replaced: z.boolean().describe('The fact id was already present and its fact was replaced.'),
    duplicate: z
      .boolean()
      .describe(
        'The fact id was already present with the identical fact (a redelivered message): nothing was applied again, and ' +
          'activated/deactivated are the change its first write caused, so a change can be published more than once.',
      ),
    latency_ms: z.number().describe('Milliseconds for the whole write: working memory plus evaluation.'),
    revision: z.number().int().min(0).describe('The rule revision the evaluation used.'),
    source: sourcePositionSchema.describe('The input message this result answers.'),
    truncated: z
      .literal(true)
      .optional()
      .describe(
        'Present when the whole result would pass KAFKA_MAX_RESULT_BYTES: fired_rules and actions are then empty, the ' +
          'change (activated, deactivated) is whole, and GET /api/v1/executions/{execution_id} holds the rest (unless ' +
          'KAFKA_RECORD_EXECUTIONS=false). The write was applied, so its change is published rather than dead-lettered.',
      ),
  })
  .describe('The evaluation of a session after one fact message, written to the results topic.');
export type SessionResultMessage = z.infer<typeof sessionResultMessageSchema>;

/** Header names the dead-letter topic adds; the value and key are the original bytes. */
export const DEAD_LETTER_HEADERS = {
  errorCode: 'error_code',
  errorDetail: 'error_detail',
  sourceTopic: 'source_topic',
  sourcePartition: 'source_partition',
  sourceOffset: 'source_offset',
} as const;

/** The headers of a dead letter, as strings; the original headers are kept beside them. */
export const deadLetterHeadersSchema = z
  .looseObject({
    [DEAD_LETTER_HEADERS.errorCode]: z.string().describe('A code from the error registry, e.g. VALIDATION_ERROR.'),
    [DEAD_LETTER_HEADERS.errorDetail]: z.string().describe('Why the message can never be evaluated.'),
    [DEAD_LETTER_HEADERS.sourceTopic]: z.string(),
    [DEAD_LETTER_HEADERS.sourcePartition]: z.string().regex(/^\d+$/),
    [DEAD_LETTER_HEADERS.sourceOffset]: z.string().regex(/^\d+$/),
  })
  .describe(
    'Headers of a message on the dead-letter topic; its key and value are the original bytes, or null when the dead-letter topic takes smaller messages (error_detail then says so).',
  );
export type DeadLetterHeaders = z.infer<typeof deadLetterHeadersSchema>;

/** The value of a message on the compacted rule changelog; its key is `rule-<id>`, or `all` for a change not tied to one rule. */
export const ruleChangeMessageSchema = z
  .strictObject({
    revision: z.number().int().min(0).describe('The store-wide rule revision the change produced.'),
    rule_id: z.number().int().min(1).nullable().describe('The rule that changed; null when the change was not to one rule.'),
    change: z.enum(['create', 'update', 'delete', 'reload']).describe('What happened.'),
    at: z.string().describe('When, ISO 8601.'),
  })
  .describe('A change to the rules: every instance reloads its catalog to at least this revision.');
export type RuleChangeMessage = z.infer<typeof ruleChangeMessageSchema>;
