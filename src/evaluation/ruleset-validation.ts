// Validates a whole ruleset without storing it: each rule's fields and DSL, and names unique within a domain.
import { z } from 'zod';
import type { ValidationIssue, ValidationResult } from '../contracts/evaluation.ts';
import { DEFAULT_DOMAIN, ruleFieldSchemas } from '../contracts/rule.ts';
import { validateCondition } from '../engine/index.ts';
import { relocateIssues } from './dsl-errors.ts';

/** A rule as it would be created: the fields POST /api/v1/rules accepts, the DSL checked separately. */
const candidateRule = z.strictObject({
  name: ruleFieldSchemas.name,
  domain: ruleFieldSchemas.domain.optional(),
  condition_dsl: z.custom<unknown>((value) => value !== undefined, { error: 'condition_dsl is required' }),
  action: ruleFieldSchemas.action,
  priority: ruleFieldSchemas.priority.optional(),
  enabled: z.boolean().optional(),
  description: ruleFieldSchemas.description.nullable().optional(),
  tags: ruleFieldSchemas.tags.optional(),
});

/** Just what makes a rule's name unique: read from a rule whatever its other fields hold. */
const ruleNaming = z.object({ name: ruleFieldSchemas.name, domain: ruleFieldSchemas.domain.optional() });

function pathOf(prefix: string, path: readonly PropertyKey[]): string {
  let text = prefix;
  for (const segment of path) text += typeof segment === 'number' ? `[${segment}]` : `.${String(segment)}`;
  return text;
}

export function validateRuleset(rules: readonly unknown[]): ValidationResult {
  const errors: ValidationIssue[] = [];
  const firstByName = new Map<string, number>();
  rules.forEach((rule, index) => {
    const prefix = `rules[${index}]`;
    const parsed = candidateRule.safeParse(rule);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) errors.push({ path: pathOf(prefix, issue.path), message: issue.message });
    }
    const dsl = typeof rule === 'object' && rule !== null ? (rule as Record<string, unknown>).condition_dsl : undefined;
    if (dsl !== undefined) {
      const result = validateCondition(dsl);
      if (!result.valid) errors.push(...relocateIssues(result.errors, `${prefix}.condition_dsl`));
    }
    // Names are compared whenever name and domain are valid, so a clash shows up beside the rule's other problems.
    const naming = ruleNaming.safeParse(rule);
    if (naming.success) {
      const domain = naming.data.domain ?? DEFAULT_DOMAIN;
      const key = JSON.stringify([domain, naming.data.name]);
      const first = firstByName.get(key);
      if (first === undefined) firstByName.set(key, index);
      else
        errors.push({
          path: `${prefix}.name`,
          message: `duplicate name "${naming.data.name}" in domain "${domain}" (first at rules[${first}])`,
        });
    }
  });
  return { valid: errors.length === 0, errors };
}
