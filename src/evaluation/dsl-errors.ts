// One wording for DSL problems: every transport reports them as DSL_ERROR listing the path of each problem.
import type { ValidationIssue } from '../contracts/evaluation.ts';
import { validateCondition } from '../engine/index.ts';
import { AppError } from '../errors.ts';

/** The engine's paths start at "root"; under a request they start at the field holding the DSL, e.g. rules[2].condition_dsl. */
export function relocateIssues(issues: readonly ValidationIssue[], prefix: string): ValidationIssue[] {
  return issues.map((issue) => ({ path: prefix + issue.path.replace(/^root/, ''), message: issue.message }));
}

export function describeDslIssues(issues: readonly ValidationIssue[]): string {
  return `Invalid condition_dsl: ${issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ')}`;
}

/** Throws AppError DSL_ERROR naming every problem of the tree, with paths under `prefix`. */
export function assertValidCondition(dsl: unknown, prefix = 'root'): void {
  const result = validateCondition(dsl);
  if (!result.valid) throw new AppError('DSL_ERROR', describeDslIssues(relocateIssues(result.errors, prefix)));
}
