// Compiles a validated DSL tree into closures, once per rule; identical comparisons share one closure.
import { type AccumulateNode, CANONICAL_OPERATOR, type ConditionNode, type ConditionValue } from '../contracts/condition-dsl.ts';
import { AppError } from '../errors.ts';
import { type Accumulator, type AggregateValues, aggregateValue, contributionOf, findAccumulateNodes } from './accumulators.ts';
import { compileGetter, type FieldGetter } from './field-path.ts';
import { type OperatorOptions, valueTest } from './operators.ts';
import { compileRegex } from './regex-safety.ts';
import { validateCondition } from './validate-condition.ts';

/** A compiled condition over a fact root the caller has already checked with isFactObject. */
export type Predicate = (root: unknown) => boolean;

export interface CompileOptions {
  /** Strings longer than this never match a `regex` condition. Default 10,000. */
  regexMaxInputLength?: number;
}

export const DEFAULT_REGEX_MAX_INPUT_LENGTH = 10_000;

const hasOwn = Object.hasOwn;

/** A fact (or a quantified element) conditions can hold against: a non-null, non-array object. */
export function isFactObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Caches shared by every rule of one engine: getters per path, closures per identical comparison, regexes per pattern. */
export class CompileContext {
  readonly operators: OperatorOptions;
  readonly #getters = new Map<string, FieldGetter>();
  readonly #leaves = new Map<string, Predicate>();
  readonly #regexes = new Map<string, (text: string) => boolean>();
  readonly #accumulators = new Map<AccumulateNode, Accumulator>();
  #anonymous = 0;
  /**
   * Aggregate values of the evaluation in progress (a session's working memory), read by compiled accumulate nodes;
   * undefined: each accumulate node sees the one fact evaluated. Evaluation is synchronous, so one field suffices.
   */
  aggregates: AggregateValues | undefined = undefined;

  constructor(regexMaxInputLength: number = DEFAULT_REGEX_MAX_INPUT_LENGTH) {
    this.operators = { regexMaxInputLength, regex: (pattern) => this.regex(pattern) };
  }

  regex(pattern: string): (text: string) => boolean {
    let compiled = this.#regexes.get(pattern);
    if (compiled === undefined) {
      compiled = compileRegex(pattern);
      this.#regexes.set(pattern, compiled);
    }
    return compiled;
  }

  getter(path: string): FieldGetter {
    let getter = this.#getters.get(path);
    if (getter === undefined) {
      getter = compileGetter(path);
      this.#getters.set(path, getter);
    }
    return getter;
  }

  /** Registers the accumulate nodes of one rule under their stable ids (see Accumulator.id) and returns them. */
  registerRule(ruleId: number, condition: ConditionNode): Accumulator[] {
    return findAccumulateNodes(ruleId, condition).map(({ id, node }) => this.#register(id, ruleId, node));
  }

  /** The accumulator of a node: registered with its rule, else (a condition compiled on its own) an anonymous one. */
  accumulator(node: AccumulateNode): Accumulator {
    const known = this.#accumulators.get(node);
    if (known !== undefined) return known;
    this.#anonymous += 1;
    return this.#register(`anonymous:${this.#anonymous}`, 0, node);
  }

  #register(id: string, ruleId: number, node: AccumulateNode): Accumulator {
    const where = node.where === undefined ? null : compileNode(node.where, this);
    const get = node.field === undefined ? null : this.getter(node.field);
    const accumulator: Accumulator = {
      id,
      ruleId,
      fn: node.function,
      windowMs: node.window_seconds === undefined ? undefined : node.window_seconds * 1_000,
      field: node.field,
      node,
      contribution: contributionOf(node, where, get),
    };
    this.#accumulators.set(node, accumulator);
    return accumulator;
  }

  /** The closure of one comparison, shared by every rule with the same field, operator and value. */
  comparison(node: Extract<ConditionNode, { type: 'condition' }>): Predicate {
    const op = CANONICAL_OPERATOR[node.op];
    const key = `${node.field}\u0000${op}\u0000${JSON.stringify(node.value)}`;
    let predicate = this.#leaves.get(key);
    if (predicate === undefined) {
      const test = valueTest(op, node.value, this.operators);
      const field = node.field;
      if (field.includes('.')) {
        const get = this.getter(field);
        predicate = (root) => test(get(root));
      } else {
        // Roots are non-array objects here, so a plain own-property read is the whole path walk.
        predicate = (root) => test(hasOwn(root as object, field) ? (root as Record<string, unknown>)[field] : undefined);
      }
      this.#leaves.set(key, predicate);
    }
    return predicate;
  }
}

function allOf(predicates: readonly Predicate[]): Predicate {
  switch (predicates.length) {
    case 1:
      return predicates[0]!;
    case 2: {
      const [a, b] = predicates as [Predicate, Predicate];
      return (root) => a(root) && b(root);
    }
    case 3: {
      const [a, b, c] = predicates as [Predicate, Predicate, Predicate];
      return (root) => a(root) && b(root) && c(root);
    }
    default:
      return (root) => {
        for (let i = 0; i < predicates.length; i += 1) if (!predicates[i]!(root)) return false;
        return true;
      };
  }
}

function anyOf(predicates: readonly Predicate[]): Predicate {
  if (predicates.length === 1) return predicates[0]!;
  if (predicates.length === 2) {
    const [a, b] = predicates as [Predicate, Predicate];
    return (root) => a(root) || b(root);
  }
  return (root) => {
    for (let i = 0; i < predicates.length; i += 1) if (predicates[i]!(root)) return true;
    return false;
  };
}

/** Compiles a validated node; recursion depth is bounded by DSL_LIMITS.maxDepth. */
export function compileNode(node: ConditionNode, context: CompileContext): Predicate {
  switch (node.type) {
    case 'condition':
      return context.comparison(node);
    case 'and':
      return allOf(node.children.map((child) => compileNode(child, context)));
    case 'or':
      return anyOf(node.children.map((child) => compileNode(child, context)));
    case 'not': {
      const child = compileNode(node.child, context);
      return (root) => !child(root);
    }
    case 'exists': {
      const get = context.getter(node.field);
      return (root) => {
        const value = get(root);
        return value !== undefined && value !== null;
      };
    }
    case 'any': {
      const get = context.getter(node.field);
      const inner = compileNode(node.condition, context);
      // Quantifier contract: a non-array field is false; an element that is not an object satisfies nothing.
      return (root) => {
        const list = get(root);
        if (!Array.isArray(list)) return false;
        for (let i = 0; i < list.length; i += 1) {
          const element: unknown = list[i];
          if (isFactObject(element) && inner(element)) return true;
        }
        return false;
      };
    }
    case 'all': {
      const get = context.getter(node.field);
      const inner = compileNode(node.condition, context);
      // Quantifier contract: vacuously true on an empty array, false on a non-array field.
      return (root) => {
        const list = get(root);
        if (!Array.isArray(list)) return false;
        for (let i = 0; i < list.length; i += 1) {
          const element: unknown = list[i];
          if (!isFactObject(element) || !inner(element)) return false;
        }
        return true;
      };
    }
    case 'accumulate': {
      const accumulator = context.accumulator(node);
      const test = valueTest(CANONICAL_OPERATOR[node.op], node.value as ConditionValue, context.operators);
      // Accumulate contract: an aggregate of nothing (null) compares false, whatever the operator.
      return (root) => {
        const value = aggregateValue(accumulator, root, context.aggregates);
        return value !== null && test(value);
      };
    }
  }
}

/** The conjunction of several nodes (a rule's residual after indexing); an empty list always holds. */
export function compileConjunction(nodes: readonly ConditionNode[], context: CompileContext): Predicate | null {
  if (nodes.length === 0) return null;
  return allOf(nodes.map((node) => compileNode(node, context)));
}

/** The DSL_ERROR detail for a condition's problems: `<path>: <message>; ...`. */
export function describeProblems(errors: readonly { path: string; message: string }[]): string {
  return errors.map((error) => `${error.path}: ${error.message}`).join('; ');
}

/**
 * Compiles one condition into a closure over facts. Throws AppError DSL_ERROR when the condition is invalid.
 * The closure never throws; a fact that is not an object matches nothing.
 */
export function compileCondition(dsl: ConditionNode, options: CompileOptions = {}): (facts: unknown) => boolean {
  const validation = validateCondition(dsl);
  if (!validation.valid) throw new AppError('DSL_ERROR', describeProblems(validation.errors));
  const predicate = compileNode(dsl, new CompileContext(options.regexMaxInputLength));
  return (facts) => {
    try {
      return isFactObject(facts) && predicate(facts);
    } catch {
      // Only exotic non-JSON facts (throwing getters, revoked proxies) get here; they match nothing.
      return false;
    }
  };
}
