// Explains one rule against one fact by walking its condition tree; same semantics as the compiled closures.
import { type AccumulateNode, CANONICAL_OPERATOR, type ConditionNode, type ConditionValue } from '../contracts/condition-dsl.ts';
import type { Explanation } from '../contracts/evaluation.ts';
import type { Rule } from '../contracts/rule.ts';
import { aggregateValue } from './accumulators.ts';
import { type CompileContext, isFactObject } from './compile-condition.ts';
import { valueTest } from './operators.ts';
import { joinList, renderActual, renderCondition } from './render-condition.ts';

interface Failure {
  readonly text: string;
  readonly detail: string;
}

/** Where a walk writes what held and what failed; null when only the truth value is wanted. */
interface Sink {
  readonly matching: string[];
  readonly failing: Failure[];
}

function newSink(): Sink {
  return { matching: [], failing: [] };
}

function merge(into: Sink | null, from: Sink): void {
  if (into === null) return;
  into.matching.push(...from.matching);
  into.failing.push(...from.failing);
}

/** Why a leaf-like node failed, as shown after it: `missing`, `actual: 4200`. */
function leafDetail(node: ConditionNode, root: unknown, context: CompileContext): string {
  if (node.type === 'condition' || node.type === 'exists') return renderActual(context.getter(node.field)(root));
  if (node.type === 'accumulate') return renderActual(aggregateOf(node, root, context));
  return 'the inner condition held';
}

/** Why a condition failed: the value seen, or that a regex was not applied to text past the engine's length limit. */
function conditionDetail(operator: string, actual: unknown, context: CompileContext): string {
  const limit = context.operators.regexMaxInputLength;
  if (operator === 'regex' && typeof actual === 'string' && actual.length > limit) {
    // The limit counts UTF-16 code units, as the operator does: an emoji is two, unlike the API's other text limits.
    return `longer than ${limit} UTF-16 code units: regex not applied`;
  }
  return renderActual(actual);
}

/** The aggregate an accumulate node compares: the session's (context.aggregates) or the one fact's. */
function aggregateOf(node: AccumulateNode, root: unknown, context: CompileContext): number | null {
  return aggregateValue(context.accumulator(node), root, context.aggregates);
}

function walk(node: ConditionNode, root: unknown, context: CompileContext, sink: Sink | null): boolean {
  switch (node.type) {
    case 'condition': {
      const actual = context.getter(node.field)(root);
      const operator = CANONICAL_OPERATOR[node.op];
      const held = valueTest(operator, node.value, context.operators)(actual);
      if (held) sink?.matching.push(renderCondition(node));
      else sink?.failing.push({ text: renderCondition(node), detail: conditionDetail(operator, actual, context) });
      return held;
    }
    case 'exists': {
      const actual = context.getter(node.field)(root);
      const held = actual !== undefined && actual !== null;
      if (held) sink?.matching.push(renderCondition(node));
      else sink?.failing.push({ text: renderCondition(node), detail: renderActual(actual) });
      return held;
    }
    case 'and': {
      // Every child is walked (no short-circuit) so every leaf that held or failed is listed.
      let held = true;
      for (const child of node.children) held = walk(child, root, context, sink) && held;
      return held;
    }
    case 'or': {
      const held: Sink = newSink();
      const failed: Sink = newSink();
      let any = false;
      for (const child of node.children) {
        const childSink = newSink();
        const childHeld = walk(child, root, context, childSink);
        merge(childHeld ? held : failed, childSink);
        any ||= childHeld;
      }
      // A held `or` is explained by the branches that held; a failed one by all of them.
      merge(sink, any ? held : failed);
      return any;
    }
    case 'not': {
      const held = !walk(node.child, root, context, null);
      if (held) sink?.matching.push(renderCondition(node));
      else sink?.failing.push({ text: renderCondition(node), detail: leafDetail(node.child, root, context) });
      return held;
    }
    case 'any':
    case 'all':
      return walkQuantifier(node, root, context, sink);
    case 'accumulate': {
      const actual = aggregateOf(node, root, context);
      const held = actual !== null && valueTest(CANONICAL_OPERATOR[node.op], node.value as ConditionValue, context.operators)(actual);
      // The aggregate is shown either way: it is not visible in the fact the caller sent.
      if (held) sink?.matching.push(`${renderCondition(node)} (${renderActual(actual)})`);
      else sink?.failing.push({ text: renderCondition(node), detail: renderActual(actual) });
      return held;
    }
  }
}

function walkQuantifier(
  node: Extract<ConditionNode, { type: 'any' | 'all' }>,
  root: unknown,
  context: CompileContext,
  sink: Sink | null,
): boolean {
  const text = renderCondition(node);
  const list = context.getter(node.field)(root);
  if (!Array.isArray(list)) {
    sink?.failing.push({ text, detail: list === undefined ? 'missing' : `not a list, ${renderActual(list)}` });
    return false;
  }
  const holds = (index: number): boolean => {
    const element: unknown = list[index];
    return isFactObject(element) && walk(node.condition, element, context, null);
  };
  if (node.type === 'any') {
    for (let i = 0; i < list.length; i += 1) {
      if (holds(i)) {
        sink?.matching.push(`${text} (${node.field}[${i}] matched)`);
        return true;
      }
    }
    sink?.failing.push({ text, detail: list.length === 0 ? 'empty list' : 'no element matched' });
    return false;
  }
  for (let i = 0; i < list.length; i += 1) {
    if (!holds(i)) {
      sink?.failing.push({ text, detail: `${node.field}[${i}] did not match` });
      return false;
    }
  }
  sink?.matching.push(`${text} (${list.length === 0 ? 'empty list: holds vacuously' : `all ${list.length} elements matched`})`);
  return true;
}

/** The Explanation of a rule for a fact. Never throws: unreadable facts explain as not matched. */
export function explainRule(rule: Rule, facts: unknown, context: CompileContext): Explanation {
  const base = { rule_id: rule.id, rule_name: rule.name, condition_dsl: rule.condition_dsl };
  const name = `Rule '${rule.name}'`;
  try {
    if (!isFactObject(facts)) {
      return {
        ...base,
        matched: false,
        matching_conditions: [],
        failing_conditions: [],
        explanation: `${name} did not match: the facts are not a JSON object.`,
      };
    }
    const sink = newSink();
    const matched = walk(rule.condition_dsl, facts, context, sink);
    const failing = sink.failing.map((failure) => `${failure.text} (${failure.detail})`);
    const explanation = matched
      ? `${name} matched: ${joinList(sink.matching)} held.`
      : `${name} did not match: ${joinList(sink.failing.map((failure) => `${failure.text} failed (${failure.detail})`))}.`;
    return { ...base, matched, matching_conditions: sink.matching, failing_conditions: failing, explanation };
  } catch {
    return {
      ...base,
      matched: false,
      matching_conditions: [],
      failing_conditions: [],
      explanation: `${name} did not match: the facts could not be read.`,
    };
  }
}
