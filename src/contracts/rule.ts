// A rule as the engine and every transport see it.
import { z } from 'zod';
import { conditionNodeSchema } from './condition-dsl.ts';
import { isStorableText, UNSTORABLE_TEXT } from './storable-text.ts';

export const DEFAULT_DOMAIN = 'default';

/** A string the rule store keeps as text: anything else would fail in the database instead of being refused here. */
const text = (name: string) => z.string().refine(isStorableText, `${name} ${UNSTORABLE_TEXT}`);

// Trimmed, then not empty: the same as holding a non-space character, which the OpenAPI document can show as a pattern.
const name = text('name').trim().regex(/\S/, 'name must not be empty').max(200);
/** Longest domain name. */
const MAX_DOMAIN_LENGTH = 100;
const domain = text('domain').trim().regex(/\S/, 'domain must not be empty').max(MAX_DOMAIN_LENGTH);
const action = text('action').min(1, 'action must not be empty').max(200);
const tag = text('a tag').min(1).max(64);
const tags = z.array(tag).max(50);
const description = text('description').max(2_000);
/** Rule priorities are stored as a 32-bit integer. */
const priority = z.number().int().min(-2_147_483_648).max(2_147_483_647);

/** A rule the engine can compile. `condition_dsl` is validated separately so every DSL problem gets a path. */
export const ruleSchema = z.strictObject({
  id: z.number().int().min(1),
  name,
  domain: domain.default(DEFAULT_DOMAIN),
  condition_dsl: conditionNodeSchema,
  action,
  priority: z.number().int().default(0),
  enabled: z.boolean().default(true),
  description: description.optional(),
  tags: tags.optional(),
});
export type Rule = z.output<typeof ruleSchema>;
/** What a caller hands to the engine: defaults may be left out. */
export type RuleInput = z.input<typeof ruleSchema>;

export const ruleFieldSchemas = { name, domain, action, priority, tag, tags, description } as const;

/** True for a domain the domain schema accepts unchanged (nothing to trim), so a hot path may skip the schema; false leaves it to the schema. */
export function isCommonDomain(value: unknown): boolean {
  return (
    typeof value === 'string' && value.length >= 1 && value.length <= MAX_DOMAIN_LENGTH && value.trim() === value && isStorableText(value)
  );
}
