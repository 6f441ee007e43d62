// Accumulate nodes (DSL contract, docs/dsl.md): their stable ids, what one fact contributes, and the single-fact aggregate.
import type { AccumulateFunction, AccumulateNode, ConditionNode } from '../contracts/condition-dsl.ts';
import type { FieldGetter } from './field-path.ts';

/** Aggregate value per accumulator id, e.g. from a session's working memory; null when nothing contributes. */
export type AggregateValues = Readonly<Record<string, number | null>>;

/** One accumulate node of one rule, as a session needs it to maintain the aggregate. */
export interface Accumulator {
  /**
   * Stable id: rule id, node path and a hash of the node, e.g. `r12:root.1:5d41402a`. Changing the node changes the
   * id, so a session never mixes contributions made under the old definition with the new one.
   */
  readonly id: string;
  readonly ruleId: number;
  readonly fn: AccumulateFunction;
  /** Sliding window in ms by event time; undefined: every fact of the session. */
  readonly windowMs: number | undefined;
  readonly field: string | undefined;
  readonly node: AccumulateNode;
  /** What one fact adds: 1 for count, the field's finite number for the others; undefined when it adds nothing. Never throws. */
  contribution(fact: unknown): number | undefined;
}

/** 32-bit FNV-1a of a string, as 8 hex digits: short, deterministic, no I/O. */
function fnv1a(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i += 1) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0).toString(16).padStart(8, '0');
}

/**
 * The accumulate nodes of a condition with their ids, in tree order. Path segments: a child index of and/or, `not`.
 * Validation keeps accumulate out of any/all and out of another accumulate's where, so those are not walked.
 */
export function findAccumulateNodes(ruleId: number, condition: ConditionNode): { id: string; node: AccumulateNode }[] {
  const found: { id: string; node: AccumulateNode }[] = [];
  const visit = (node: ConditionNode, path: string): void => {
    switch (node.type) {
      case 'and':
      case 'or':
        for (const [index, child] of node.children.entries()) visit(child, `${path}.${index}`);
        return;
      case 'not':
        visit(node.child, `${path}.not`);
        return;
      case 'accumulate':
        found.push({ id: `r${ruleId}:${path}:${fnv1a(jsonbOrderedJson(node))}`, node });
        return;
      default:
        return;
    }
  };
  visit(condition, 'root');
  return found;
}

/**
 * JSON with every object's keys in PostgreSQL jsonb's order (shorter first, then by their UTF-8 bytes): an accumulate
 * node's id must not depend on the order a reader gave its keys, and the ids sessions already hold were made from nodes
 * read back from jsonb in that order.
 */
export function jsonbOrderedJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((item) => (item === undefined ? 'null' : jsonbOrderedJson(item))).join(',')}]`;
  if (typeof value !== 'object' || value === null) return JSON.stringify(value);
  const keys = Object.keys(value).filter((key) => (value as Record<string, unknown>)[key] !== undefined);
  keys.sort((a, b) => {
    const left = Buffer.from(a);
    const right = Buffer.from(b);
    return left.length - right.length || Buffer.compare(left, right);
  });
  return `{${keys.map((key) => `${JSON.stringify(key)}:${jsonbOrderedJson((value as Record<string, unknown>)[key])}`).join(',')}}`;
}

/** A fact (or element) conditions can hold against: a non-null, non-array object. */
function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The contribution function of a node, from its compiled where predicate and field getter. */
export function contributionOf(
  node: AccumulateNode,
  where: ((fact: Record<string, unknown>) => boolean) | null,
  get: FieldGetter | null,
): (fact: unknown) => number | undefined {
  const counts = node.function === 'count';
  return (fact) => {
    try {
      if (!isObject(fact)) return undefined;
      if (where !== null && !where(fact)) return undefined;
      if (get === null) return counts ? 1 : undefined;
      const value = get(fact);
      if (counts) return value === undefined || value === null ? undefined : 1;
      return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
    } catch {
      // Only exotic non-JSON facts get here; they contribute nothing.
      return undefined;
    }
  };
}

/** The aggregate when the working memory is one fact: count and sum of nothing are 0, avg, min and max null. */
export function singleFactAggregate(fn: AccumulateFunction, contribution: number | undefined): number | null {
  if (contribution !== undefined) return contribution;
  return fn === 'count' || fn === 'sum' ? 0 : null;
}

/** The aggregate an accumulate node compares: from the given values (a session's), else the single-fact aggregate. */
export function aggregateValue(accumulator: Accumulator, fact: unknown, aggregates: AggregateValues | undefined): number | null {
  if (aggregates !== undefined && Object.hasOwn(aggregates, accumulator.id)) return aggregates[accumulator.id] ?? null;
  return singleFactAggregate(accumulator.fn, accumulator.contribution(fact));
}
