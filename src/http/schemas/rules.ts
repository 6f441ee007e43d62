// Request and response bodies of rules and rulesets.
import { z } from 'zod';
import { ruleFieldSchemas } from '../../contracts/rule.ts';
import {
  components,
  conditionDslField,
  documentRefinement,
  domainField,
  idField,
  pageQueryFields,
  queryBoolean,
  timestampField,
} from './common.ts';

const ruleFields = {
  name: ruleFieldSchemas.name.describe('Unique within its domain.'),
  domain: ruleFieldSchemas.domain.optional().describe('Default "default".'),
  condition_dsl: conditionDslField,
  action: ruleFieldSchemas.action.describe('Reported in actions when the rule fires.'),
  priority: ruleFieldSchemas.priority.optional().describe('Higher fires first; default 0.'),
  enabled: z.boolean().optional().describe('Disabled rules never fire; default true.'),
  description: ruleFieldSchemas.description.nullable().optional(),
  tags: ruleFieldSchemas.tags.optional().describe('Labels for filtering the list (?tag=).'),
};

export const ruleBody = z.strictObject(ruleFields).register(components, { id: 'RuleRequest' });

export const rulePatchBody = documentRefinement(
  z
    .strictObject({
      ...ruleFields,
      name: ruleFields.name.optional(),
      condition_dsl: conditionDslField.optional(),
      action: ruleFields.action.optional(),
    })
    .refine((patch) => Object.keys(patch).length > 0, 'send at least one field to change')
    .register(components, { id: 'RulePatch' }),
  { minProperties: 1 },
);

export const storedRuleSchema = z
  .object({
    id: idField,
    name: z.string(),
    domain: z.string(),
    condition_dsl: conditionDslField,
    action: z.string(),
    priority: z.number().int(),
    enabled: z.boolean(),
    description: z.string().nullable().optional(),
    tags: z.array(z.string()).optional(),
    version: z.number().int().describe('1 on create, +1 on every update.'),
    created_at: timestampField,
    updated_at: timestampField,
  })
  .register(components, { id: 'Rule' });

export const ruleListQuery = z.strictObject({
  domain: domainField.optional(),
  enabled: queryBoolean.optional().describe('true or false.'),
  tag: ruleFieldSchemas.tag.optional().describe('Only rules carrying this tag.'),
  ...pageQueryFields,
});

export const ruleVersionSchema = z
  .object({
    rule_id: idField,
    version: z.number().int(),
    change: z
      .enum(['create', 'update', 'delete'])
      .describe("What produced this version; a deleted rule's last version is 'delete' (the rule as it was when deleted)."),
    rule: storedRuleSchema,
    changed_at: timestampField,
    actor: z.string().describe('Name of the API key that made the change, or "anonymous".'),
  })
  .register(components, { id: 'RuleVersion' });

export const rulesetBody = z
  .strictObject({
    name: ruleFieldSchemas.name.describe('Unique across rulesets.'),
    domain: ruleFieldSchemas.domain.describe('The domain whose rules the ruleset groups.'),
    description: ruleFieldSchemas.description.nullable().optional(),
  })
  .register(components, { id: 'RulesetRequest' });

export const rulesetSchema = z
  .object({
    id: idField,
    name: z.string(),
    domain: z.string(),
    description: z.string().nullable(),
    rule_count: z.number().int().describe("Rules in the ruleset's domain, enabled or not."),
    revision: z.number().int().describe('Rules revision the counts were taken at.'),
    created_at: timestampField,
    updated_at: timestampField,
  })
  .register(components, { id: 'Ruleset' });
