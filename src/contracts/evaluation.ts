// Results of evaluation and explanation, shared by the engine, HTTP and Kafka.
import { z } from 'zod';

export const evaluationResultSchema = z.object({
  fired_rules: z.array(z.number().int()).describe('Ids of the rules that fired: priority descending, then id ascending.'),
  actions: z.array(z.string()).describe('Distinct actions of the fired rules, in fired_rules order.'),
  latency_ms: z.number().describe('Evaluation time in milliseconds.'),
});
export type EvaluationResult = z.infer<typeof evaluationResultSchema>;

export const explanationSchema = z.object({
  rule_id: z.number().int(),
  rule_name: z.string(),
  condition_dsl: z.unknown(),
  matched: z.boolean(),
  matching_conditions: z.array(z.string()).describe('Conditions that held, e.g. "amount > 5000".'),
  failing_conditions: z
    .array(z.string())
    .describe('Conditions that did not hold, with the value seen, e.g. "amount > 5000 (actual: 4200)" or "country in [US, CA] (missing)".'),
  explanation: z.string().describe('One sentence saying why the rule did or did not match.'),
});
export type Explanation = z.infer<typeof explanationSchema>;

export const validationIssueSchema = z.object({
  path: z.string().describe('Where the problem is, e.g. root.children[1].op'),
  message: z.string(),
});
export type ValidationIssue = z.infer<typeof validationIssueSchema>;

export const validationResultSchema = z.object({
  valid: z.boolean(),
  errors: z.array(validationIssueSchema),
});
export type ValidationResult = z.infer<typeof validationResultSchema>;
