// Splits a rule's condition into tests the alpha index answers by lookup and the rest a closure must confirm.
import { CANONICAL_OPERATOR, type ConditionNode, type Scalar } from '../contracts/condition-dsl.ts';

export type Comparison = Extract<ConditionNode, { type: 'condition' }>;

/** `field == value` or `field in [values]`: answered by hashing the fact's value. */
export interface EqualityTest {
  readonly field: string;
  /** Distinct values; the test holds when the fact value is one of them (strictly equal). */
  readonly values: readonly Scalar[];
  readonly node: Comparison;
}

/** `>`, `>=`, `<`, `<=` (and each half of `between`): answered by binary search over sorted thresholds. */
export interface RangeTest {
  readonly field: string;
  /** lower: the fact value must be above the bound; upper: below it. */
  readonly side: 'lower' | 'upper';
  /** True for `>`/`<`, false for `>=`/`<=`. */
  readonly strict: boolean;
  readonly bound: number | string;
  readonly node: Comparison;
}

/** Tests that must all hold for the rule to hold through this alternative. */
export interface Alternative {
  readonly equalities: readonly EqualityTest[];
  readonly ranges: readonly RangeTest[];
}

export interface GatePlan {
  /** Alternatives of which at least one holds whenever the rule holds; null when no index can prune the rule. */
  readonly alternatives: readonly Alternative[] | null;
  /** The rule's top-level conjuncts (nested `and`s flattened): what a candidate must satisfy. */
  readonly conjuncts: readonly ConditionNode[];
  /**
   * True when the only alternative was drawn from the conjuncts themselves: the tests the index covers then need no
   * second check. False when the alternatives come from an `or`: every conjunct is confirmed.
   */
  readonly direct: boolean;
}

/** More alternatives than this (from `or`) cost more to index than a closure costs to run. */
const MAX_ALTERNATIVES = 32;

function flattenAnd(node: ConditionNode, out: ConditionNode[]): ConditionNode[] {
  if (node.type === 'and') for (const child of node.children) flattenAnd(child, out);
  else out.push(node);
  return out;
}

function rangeTests(node: Comparison, out: RangeTest[]): void {
  const op = CANONICAL_OPERATOR[node.op];
  const field = node.field;
  switch (op) {
    case '>':
    case '>=':
      out.push({ field, side: 'lower', strict: op === '>', bound: node.value as number | string, node });
      return;
    case '<':
    case '<=':
      out.push({ field, side: 'upper', strict: op === '<', bound: node.value as number | string, node });
      return;
    case 'between': {
      const [low, high] = node.value as [number, number] | [string, string];
      out.push({ field, side: 'lower', strict: false, bound: low, node });
      out.push({ field, side: 'upper', strict: false, bound: high, node });
      return;
    }
    default:
      return;
  }
}

/** The indexable tests among conjuncts, or null when there is none. */
function alternativeOf(conjuncts: readonly ConditionNode[]): Alternative | null {
  const equalities: EqualityTest[] = [];
  const ranges: RangeTest[] = [];
  for (const node of conjuncts) {
    if (node.type !== 'condition') continue;
    const op = CANONICAL_OPERATOR[node.op];
    if (op === '==') equalities.push({ field: node.field, values: [node.value as Scalar], node });
    else if (op === 'in') equalities.push({ field: node.field, values: [...new Set(node.value as Scalar[])], node });
    else rangeTests(node, ranges);
  }
  return equalities.length > 0 || ranges.length > 0 ? { equalities, ranges } : null;
}

function planOr(node: Extract<ConditionNode, { type: 'and' | 'or' }>): Alternative[] | null {
  const alternatives: Alternative[] = [];
  for (const child of node.children) {
    const branch = planBranch(flattenAnd(child, []));
    if (branch === null) return null;
    alternatives.push(...branch);
    if (alternatives.length > MAX_ALTERNATIVES) return null;
  }
  return alternatives;
}

/** The alternatives of a conjunction: its own indexable tests, else those of its most selective `or`. */
function planBranch(conjuncts: readonly ConditionNode[]): Alternative[] | null {
  const direct = alternativeOf(conjuncts);
  if (direct !== null) return [direct];
  let best: Alternative[] | null = null;
  for (const node of conjuncts) {
    if (node.type !== 'or') continue;
    const alternatives = planOr(node);
    if (alternatives !== null && (best === null || alternatives.length < best.length)) best = alternatives;
  }
  return best;
}

/** How the alpha index will find this rule; see GatePlan. */
export function planGates(condition: ConditionNode): GatePlan {
  const conjuncts = flattenAnd(condition, []);
  const direct = alternativeOf(conjuncts);
  if (direct !== null) return { alternatives: [direct], conjuncts, direct: true };
  return { alternatives: planBranch(conjuncts), conjuncts, direct: false };
}
