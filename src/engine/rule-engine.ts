// RuleEngine: a compiled, immutable rule set. Indexed matching per domain, explanations, no I/O and no clock of its own.
import { CANONICAL_OPERATOR, type ConditionNode, inDocumentedOrder } from '../contracts/condition-dsl.ts';
import type { EvaluationResult, Explanation } from '../contracts/evaluation.ts';
import { DEFAULT_DOMAIN, type Rule, type RuleInput } from '../contracts/rule.ts';
import { AppError } from '../errors.ts';
import type { Accumulator, AggregateValues } from './accumulators.ts';
import { AlphaNetwork, type Gate, type NetworkRule } from './alpha-network.ts';
import { CompileContext, compileConjunction, compileNode, isFactObject } from './compile-condition.ts';
import type { EngineMetrics } from './engine-metrics.ts';
import { FieldOrder, selectKeys } from './equality-trie.ts';
import { explainRule } from './explain.ts';
import { FactSlots } from './fact-slots.ts';
import { type GatePlan, planGates } from './gate-plan.ts';
import { isRowNode, ResidualProgram, type RowNode } from './residual-program.ts';
import { validateCondition } from './validate-condition.ts';

export interface EngineOptions {
  /** Revision of the rule set this engine was compiled from (e.g. the store's). Default 0. */
  revision?: number;
  /** Strings longer than this never match a `regex` condition. Default 10,000. */
  regexMaxInputLength?: number;
  /** Collector fed by every evaluate; omit it and evaluate pays nothing for metrics. */
  metrics?: EngineMetrics;
  /** Clock for latency_ms, in milliseconds. Default performance.now. */
  now?: () => number;
  /** The rules come from the store: their regexes passed the checks of the time they were stored (see regexProblem). */
  stored?: boolean;
}

export interface EvaluateOptions {
  /** Only rules of this domain are considered; all domains when omitted. */
  domain?: string;
  /**
   * Aggregate value per accumulator id (see accumulators()), e.g. a session's working memory. An accumulate node whose
   * id is absent, or every one when this is omitted, aggregates over the one fact evaluated.
   */
  aggregates?: AggregateValues;
}

export interface ExplainOptions {
  /** As in EvaluateOptions: the aggregates accumulate nodes compare. */
  aggregates?: AggregateValues;
}

const EMPTY_LOCALS = new Int32Array(0);

/** A DSL_ERROR detail lists at most this many problems, then says how many more there were. */
const MAX_REPORTED_PROBLEMS = 100;

interface CompiledRule {
  readonly rule: Rule;
  readonly plan: GatePlan;
}

function invalid(detail: string): never {
  throw new AppError('VALIDATION_ERROR', detail);
}

type UncheckedRule = Omit<Rule, 'condition_dsl'> & { condition_dsl: unknown };

/** Largest rule id (the store's ids are 32-bit too). */
export const MAX_RULE_ID = 2_147_483_647;

/** Applies the Rule defaults and checks the plain fields (the condition is validated separately). */
function normalizeRule(input: RuleInput, index: number): UncheckedRule {
  if (typeof input !== 'object' || input === null) invalid(`rules[${index}] must be an object`);
  const { id, name, domain = DEFAULT_DOMAIN, action, priority = 0, enabled = true, description, tags } = input;
  // Rule ids live in Int32Arrays in the alpha network: a larger one would come back as another number.
  if (!Number.isSafeInteger(id) || id < 1 || id > MAX_RULE_ID) invalid(`rules[${index}].id must be an integer from 1 to ${MAX_RULE_ID}`);
  const label = `rule ${id}`;
  if (typeof name !== 'string' || name.trim() === '') invalid(`${label}: name must be a non-empty string`);
  if (typeof domain !== 'string' || domain.trim() === '') invalid(`${label}: domain must be a non-empty string`);
  if (typeof action !== 'string' || action === '') invalid(`${label}: action must be a non-empty string`);
  if (!Number.isSafeInteger(priority)) invalid(`${label}: priority must be an integer`);
  if (typeof enabled !== 'boolean') invalid(`${label}: enabled must be a boolean`);
  const rule: UncheckedRule = { id, name, domain: domain.trim(), condition_dsl: input.condition_dsl, action, priority, enabled };
  if (description !== undefined) rule.description = description;
  if (tags !== undefined) rule.tags = Object.freeze([...tags]) as string[];
  return rule;
}

/** A frozen deep copy of a validated condition (keys in the documented order), so callers cannot change a compiled rule under the engine. */
function freezeCondition(node: ConditionNode): ConditionNode {
  return deepFreeze(inDocumentedOrder(node));
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const item of Object.values(value)) deepFreeze(item);
    Object.freeze(value);
  }
  return value;
}

function byFiredOrder(a: Rule, b: Rule): number {
  return b.priority - a.priority || a.id - b.id;
}

export class RuleEngine {
  /** Revision of the rule set; LiveEngine keeps it strictly increasing across swaps. */
  readonly revision: number;
  readonly #rules: readonly Rule[];
  readonly #byId: ReadonlyMap<number, Rule>;
  readonly #context: CompileContext;
  /** Enabled rules in fired order: priority descending, then id ascending. */
  readonly #ranked: readonly Rule[];
  readonly #actions: readonly string[];
  readonly #actionStamp: Uint32Array;
  #actionGeneration = 0;
  readonly #all: AlphaNetwork;
  readonly #domains: ReadonlyMap<string, { network: AlphaNetwork; ranks: Int32Array }>;
  readonly #allRanks: Int32Array;
  readonly #metrics: EngineMetrics | undefined;
  readonly #now: () => number;
  /** Accumulators of enabled rules, in fired order: all domains under the key undefined, and per domain. */
  readonly #accumulators = new Map<string | undefined, readonly Accumulator[]>();
  /** Accumulators of every rule, enabled or not, in tree order. */
  readonly #accumulatorsByRule: ReadonlyMap<number, readonly Accumulator[]>;

  private constructor(rules: readonly CompiledRule[], options: EngineOptions) {
    this.revision = options.revision ?? 0;
    this.#metrics = options.metrics;
    this.#now = options.now ?? (() => performance.now());
    this.#context = new CompileContext(options.regexMaxInputLength);
    this.#rules = rules.map((compiled) => compiled.rule);
    this.#byId = new Map(this.#rules.map((rule) => [rule.id, rule]));
    const accumulatorsOf = new Map(this.#rules.map((rule) => [rule.id, this.#context.registerRule(rule.id, rule.condition_dsl)]));
    this.#accumulatorsByRule = accumulatorsOf;

    const enabled = rules.filter((compiled) => compiled.rule.enabled).sort((a, b) => byFiredOrder(a.rule, b.rule));
    this.#ranked = enabled.map((compiled) => compiled.rule);
    for (const rule of this.#ranked) {
      const found = accumulatorsOf.get(rule.id) ?? [];
      if (found.length === 0) continue;
      for (const key of [undefined, rule.domain]) this.#accumulators.set(key, [...(this.#accumulators.get(key) ?? []), ...found]);
    }
    const actionIds = new Map<string, number>();
    const rankedActions = Int32Array.from(this.#ranked, (rule) => {
      let actionId = actionIds.get(rule.action);
      if (actionId === undefined) {
        actionId = actionIds.size;
        actionIds.set(rule.action, actionId);
      }
      return actionId;
    });
    this.#actions = [...actionIds.keys()];
    this.#actionStamp = new Uint32Array(this.#actions.length);

    const order = new FieldOrder(enabled.map((compiled) => compiled.plan));
    const slots = new FactSlots((field) => this.#context.getter(field));
    const program = new ResidualProgram(slots, this.#context.operators);
    const networkRules = enabled.map((compiled, rank) => this.#networkRule(compiled, order, program, rankedActions[rank]!));
    const measureSharing = this.#metrics !== undefined;
    this.#all = new AlphaNetwork(networkRules, slots, program, measureSharing);
    this.#allRanks = Int32Array.from(enabled, (_, rank) => rank);

    const ranksByDomain = new Map<string, number[]>();
    enabled.forEach((compiled, rank) => {
      const ranks = ranksByDomain.get(compiled.rule.domain);
      if (ranks === undefined) ranksByDomain.set(compiled.rule.domain, [rank]);
      else ranks.push(rank);
    });
    const domains = new Map<string, { network: AlphaNetwork; ranks: Int32Array }>();
    for (const [domain, ranks] of ranksByDomain) {
      // One domain only: its network is the all-domains network, built once.
      const network =
        ranksByDomain.size === 1
          ? this.#all
          : new AlphaNetwork(
              ranks.map((rank) => networkRules[rank]!),
              slots,
              program,
              measureSharing,
            );
      domains.set(domain, { network, ranks: Int32Array.from(ranks) });
    }
    this.#domains = domains;
    slots.seal();
    program.seal();
    this.#metrics?.recordCompile(this.#all.linkedRulesAvg);
  }

  /**
   * Compiles rules once: validates every condition (AppError DSL_ERROR listing every problem as
   * `rule <id>: <path>: <message>`), refuses duplicate ids (AppError VALIDATION_ERROR) and builds the alpha index.
   */
  static compile(rules: readonly RuleInput[], options: EngineOptions = {}): RuleEngine {
    if (!Array.isArray(rules)) invalid('rules must be an array');
    const seen = new Set<number>();
    const problems: string[] = [];
    const compiled: CompiledRule[] = [];
    rules.forEach((input, index) => {
      const rule = normalizeRule(input, index);
      if (seen.has(rule.id)) invalid(`duplicate rule id ${rule.id}`);
      seen.add(rule.id);
      const validation = validateCondition(rule.condition_dsl, { stored: options.stored === true });
      if (!validation.valid) {
        for (const error of validation.errors) problems.push(`rule ${rule.id}: ${error.path}: ${error.message}`);
        return;
      }
      const condition_dsl = freezeCondition(rule.condition_dsl as ConditionNode);
      compiled.push({ rule: Object.freeze({ ...rule, condition_dsl }), plan: planGates(condition_dsl) });
    });
    if (problems.length > 0) {
      const shown = problems.slice(0, MAX_REPORTED_PROBLEMS);
      if (problems.length > MAX_REPORTED_PROBLEMS) shown.push(`and ${problems.length - MAX_REPORTED_PROBLEMS} more problems`);
      throw new AppError('DSL_ERROR', shown.join('; '));
    }
    return new RuleEngine(compiled, options);
  }

  /** Number of rules, enabled or not. */
  get size(): number {
    return this.#rules.length;
  }

  /** Every rule (defaults applied, frozen), in the order given to compile. */
  rules(): readonly Rule[] {
    return this.#rules;
  }

  getRule(id: number): Rule | undefined {
    return this.#byId.get(id);
  }

  /**
   * Rules of the domain (all domains when none is given) that hold for the facts: fired_rules by priority descending
   * then id ascending, actions distinct in that order. Never throws; facts that are not an object fire nothing.
   */
  evaluate(facts: unknown, options?: EvaluateOptions): EvaluationResult {
    const aggregates = options?.aggregates;
    if (aggregates === undefined) return this.#evaluate(facts, options?.domain);
    this.#context.aggregates = aggregates;
    try {
      return this.#evaluate(facts, options?.domain);
    } finally {
      this.#context.aggregates = undefined;
    }
  }

  /**
   * The accumulate nodes of the enabled rules of the domain (all domains when none is given), in fired order: what a
   * session maintains so that evaluate can be given their aggregates.
   */
  accumulators(domain?: string): readonly Accumulator[] {
    return this.#accumulators.get(domain) ?? [];
  }

  /** The accumulate nodes of one rule, enabled or not, in tree order; empty for an unknown id. */
  ruleAccumulators(ruleId: number): readonly Accumulator[] {
    return this.#accumulatorsByRule.get(ruleId) ?? [];
  }

  #evaluate(facts: unknown, domain: string | undefined): EvaluationResult {
    const started = this.#now();
    let network: AlphaNetwork | undefined = this.#all;
    let ranks = this.#allRanks;
    if (domain !== undefined) {
      const scope = this.#domains.get(domain);
      network = scope?.network;
      ranks = scope?.ranks ?? ranks;
    }
    let count = 0;
    let local: Int32Array = EMPTY_LOCALS;
    if (network !== undefined && network.size > 0) {
      try {
        if (isFactObject(facts)) {
          count = network.match(facts);
          local = network.fired;
        }
      } catch {
        network.recover();
        local = this.#matchSafely(ranks, facts);
        count = local.length;
      }
    }
    const fired_rules = new Array<number>(count);
    const actions: string[] = [];
    if (count > 0) {
      const generation = this.#nextActionGeneration();
      for (let i = 0; i < count; i += 1) {
        fired_rules[i] = network!.idOf(local[i]!);
        const action = network!.actionOf(local[i]!);
        if (this.#actionStamp[action] !== generation) {
          this.#actionStamp[action] = generation;
          actions.push(this.#actions[action]!);
        }
      }
    }
    const latency_ms = this.#now() - started;
    if (this.#metrics !== undefined) this.#metrics.record(network?.lastCandidates ?? 0, network?.size ?? 0, latency_ms);
    return { fired_rules, actions, latency_ms };
  }

  /** Why the rule did or did not match the facts; undefined for an unknown id. Disabled rules are explained too. Never throws. */
  explain(ruleId: number, facts: unknown, options?: ExplainOptions): Explanation | undefined {
    const rule = this.#byId.get(ruleId);
    if (rule === undefined) return undefined;
    this.#context.aggregates = options?.aggregates;
    try {
      return explainRule(rule, facts, this.#context);
    } finally {
      this.#context.aggregates = undefined;
    }
  }

  /** The slow path for facts that made the indexed path throw (throwing getters, proxies): each rule guarded on its own. */
  #matchSafely(ranks: Int32Array, facts: unknown): Int32Array {
    const fired: number[] = [];
    try {
      if (!isFactObject(facts)) return EMPTY_LOCALS;
      ranks.forEach((rank, local) => {
        try {
          if (compileNode(this.#ranked[rank]!.condition_dsl, this.#context)(facts)) fired.push(local);
        } catch {
          // A rule whose condition cannot read this fact does not fire.
        }
      });
    } catch {
      return EMPTY_LOCALS;
    }
    return Int32Array.from(fired);
  }

  #networkRule(compiled: CompiledRule, order: FieldOrder, program: ResidualProgram, action: number): NetworkRule {
    const { plan } = compiled;
    const context = this.#context;
    const covered: ConditionNode[] = [];
    const gates: Gate[] | null =
      plan.alternatives?.map((alternative): Gate => {
        if (alternative.equalities.length > 0) {
          const keys = selectKeys(alternative.equalities, order);
          // The first numeric range test sorts the rule at its trie node; a whole comparison it answers needs no row.
          const range = alternative.ranges.find((test) => typeof test.bound === 'number') ?? null;
          if (plan.direct) {
            for (const key of keys) covered.push(key.node);
            if (range !== null && CANONICAL_OPERATOR[range.node.op] !== 'between') covered.push(range.node);
          }
          return { kind: 'equality', keys, range };
        }
        if (plan.direct) for (const test of alternative.ranges) covered.push(test.node);
        return { kind: 'range', tests: alternative.ranges };
      }) ?? null;
    // Conjuncts the index answered exactly need no second look; the rest become rows, or a closure when rows cannot say it.
    const rowNodes: RowNode[] = [];
    const closureNodes: ConditionNode[] = [];
    for (const node of plan.conjuncts) {
      if (covered.includes(node)) continue;
      if (isRowNode(node)) rowNodes.push(node);
      else closureNodes.push(node);
    }
    const rows = program.add(rowNodes);
    const closure = compileConjunction(closureNodes, context);
    return { gates, rows, closure, id: compiled.rule.id, action };
  }

  #nextActionGeneration(): number {
    if (this.#actionGeneration >= 0xffff_fffe) {
      this.#actionGeneration = 0;
      this.#actionStamp.fill(0);
    }
    this.#actionGeneration += 1;
    return this.#actionGeneration;
  }
}
