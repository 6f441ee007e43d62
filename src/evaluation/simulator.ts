// The simulate use case: evaluate facts against rules given inline (ids 1..n) or the stored ones; nothing is recorded.

import type { ConditionNode } from '../contracts/condition-dsl.ts';
import type { EvaluationResult, ValidationIssue } from '../contracts/evaluation.ts';
import type { RuleInput } from '../contracts/rule.ts';
import { patternSize, RuleEngine, validateCondition } from '../engine/index.ts';
import { AppError } from '../errors.ts';
import { describeDslIssues, relocateIssues } from './dsl-errors.ts';
import type { Facts } from './evaluator.ts';

export interface SimulatedRule {
  name: string;
  condition_dsl: unknown;
  action: string;
  priority?: number | undefined;
  domain?: string | undefined;
}

export interface SimulationInput {
  rules?: readonly SimulatedRule[] | undefined;
  facts: Facts;
  domain?: string | undefined;
}

export interface SimulationResult extends EvaluationResult {
  /** The stored rules' revision, or null for inline rules. */
  revision: number | null;
}

export function simulate(catalog: { readonly engine: RuleEngine }, input: SimulationInput): SimulationResult {
  const scope = input.domain === undefined ? {} : { domain: input.domain };
  if (input.rules === undefined) {
    const engine = catalog.engine;
    return { ...engine.evaluate(input.facts, scope), revision: engine.revision };
  }
  const engine = RuleEngine.compile(inlineRules(input.rules));
  return { ...engine.evaluate(input.facts, scope), revision: null };
}

/**
 * Largest total size (patternSize) of the regex patterns of one request's inline rules: they run on the event loop, and
 * a regex search on a long text costs time in proportion to its pattern (docs/dsl.md).
 */
export const MAX_INLINE_PATTERN_SIZE = 2_000;

/** Most `any`/`all` nodes one request's inline rules may hold: each scans a fact's array whole, on the event loop. */
export const MAX_INLINE_QUANTIFIERS = 64;

/** Numbers the rules 1..n in input order; every DSL problem of every rule is reported at once, as DSL_ERROR. */
export function inlineRules(rules: readonly SimulatedRule[]): RuleInput[] {
  const issues: ValidationIssue[] = [];
  rules.forEach((rule, index) => {
    const result = validateCondition(rule.condition_dsl);
    if (!result.valid) issues.push(...relocateIssues(result.errors, `rules[${index}].condition_dsl`));
  });
  if (issues.length > 0) throw new AppError('DSL_ERROR', describeDslIssues(issues));
  const patterns = rules.reduce((sum, rule) => sum + totalOver(rule.condition_dsl, patternOf), 0);
  if (patterns > MAX_INLINE_PATTERN_SIZE) {
    throw new AppError(
      'VALIDATION_ERROR',
      `The rules' regex patterns hold ${patterns.toLocaleString('en-US')} characters in all (a part repeated n times counting n times); one simulate request may carry at most ${MAX_INLINE_PATTERN_SIZE.toLocaleString('en-US')}.`,
    );
  }
  const quantifiers = rules.reduce((sum, rule) => sum + totalOver(rule.condition_dsl, quantifierOf), 0);
  if (quantifiers > MAX_INLINE_QUANTIFIERS) {
    throw new AppError(
      'VALIDATION_ERROR',
      `The rules hold ${quantifiers.toLocaleString('en-US')} any/all nodes in all (each scans a fact's array whole); one simulate request may carry at most ${MAX_INLINE_QUANTIFIERS}.`,
    );
  }
  return rules.map((rule, index) => ({
    id: index + 1,
    name: rule.name,
    condition_dsl: rule.condition_dsl as ConditionNode,
    action: rule.action,
    ...(rule.priority === undefined ? {} : { priority: rule.priority }),
    ...(rule.domain === undefined ? {} : { domain: rule.domain }),
  }));
}

/** `measure` of every node of a validated condition, summed. */
function totalOver(node: unknown, measure: (fields: Record<string, unknown>) => number): number {
  if (typeof node !== 'object' || node === null) return 0;
  const fields = node as Record<string, unknown>;
  let total = measure(fields);
  for (const child of Object.values(fields)) total += totalOver(child, measure);
  return total;
}

/** A regex node's pattern size (patternSize). */
const patternOf = (fields: Record<string, unknown>): number =>
  fields.op === 'regex' && typeof fields.value === 'string' ? patternSize(fields.value) : 0;

/** One for an `any` or `all` node. */
const quantifierOf = (fields: Record<string, unknown>): number => (fields.type === 'any' || fields.type === 'all' ? 1 : 0);
