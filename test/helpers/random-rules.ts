// fast-check arbitraries for DSL conditions, rules and facts over small pools of fields and values, so matches happen.
// Covers every node type and operator (aliases too), nested paths, literal dotted keys, prototype keys, arrays for
// any/all and contains, missing fields, nulls and type mismatches.
import fc from 'fast-check';
import type { ConditionNode, Operator, Scalar } from '../../src/contracts/condition-dsl.ts';
import type { RuleInput } from '../../src/contracts/rule.ts';

type Comparison = Extract<ConditionNode, { type: 'condition' }>;

/** Top-level field paths rules test; `x.y` also exists as a literal key, `__proto__`/`toString` probe prototype safety. */
export const FIELDS = ['a', 'b', 'n', 's', 'flag', 'user.age', 'user.name', 'x.y', 'list.0', 'tags', '__proto__', 'toString'] as const;
/** Array fields that any/all quantify over, and the fields of their elements. */
export const LIST_FIELDS = ['items', 'orders', 'tags', 'a'] as const;
export const ELEMENT_FIELDS = ['sku', 'qty', 'tags'] as const;
export const DOMAINS = ['default', 'd1', 'd2'] as const;
export const ACTIONS = ['approve', 'review', 'block', 'notify'] as const;

/** The values rules compare with and facts hold; a small pool makes equalities and bounds actually meet. */
export interface ValuePool {
  readonly numbers: readonly number[];
  readonly strings: readonly string[];
}

export const DEFAULT_POOL: ValuePool = { numbers: [-1, 0, 1, 2, 2.5, 5, 10], strings: ['', 'a', 'ab', 'b', 'ba', 'A', '5', 'FR', 'US'] };
/** So few values that most equality gates and range bounds coincide with some fact. */
export const TINY_POOL: ValuePool = { numbers: [0, 1, 5], strings: ['a', 'b', '5'] };
const PATTERNS = ['^a', 'b$', 'a.*b', '^[0-9]+$', '', 'A|B', '^$'] as const;

export function scalarsOf(pool: ValuePool): Scalar[] {
  return [...pool.numbers, ...pool.strings, true, false, null];
}

export function scalarArb(pool: ValuePool = DEFAULT_POOL): fc.Arbitrary<Scalar> {
  return fc.constantFrom(...scalarsOf(pool));
}

function listArb(pool: ValuePool): fc.Arbitrary<Scalar[]> {
  return fc.array(scalarArb(pool), { maxLength: 4 });
}

function orderedArb(pool: ValuePool): fc.Arbitrary<number | string> {
  return fc.oneof(fc.constantFrom(...pool.numbers), fc.constantFrom(...pool.strings));
}

function betweenArb(pool: ValuePool): fc.Arbitrary<[number, number] | [string, string]> {
  const sorted = <T extends number | string>([x, y]: [T, T]): [T, T] => (x <= y ? [x, y] : [y, x]);
  return fc.oneof(
    fc.tuple(fc.constantFrom(...pool.numbers), fc.constantFrom(...pool.numbers)).map(sorted),
    fc.tuple(fc.constantFrom(...pool.strings), fc.constantFrom(...pool.strings)).map(sorted),
  );
}

/** A valid comparison on one of the given fields, any operator (aliases included) with a value that suits it. */
export function comparisonArb(fields: readonly string[], pool: ValuePool = DEFAULT_POOL): fc.Arbitrary<Comparison> {
  const field = fc.constantFrom(...fields);
  const scalar = scalarArb(pool);
  const ordered = orderedArb(pool);
  const list = listArb(pool);
  const make = (op: Operator, value: fc.Arbitrary<Comparison['value']>) =>
    fc.record({ type: fc.constant('condition' as const), field, op: fc.constant(op), value });
  return fc.oneof(
    make('==', scalar),
    make('eq', scalar),
    make('!=', scalar),
    make('ne', scalar),
    make('>', ordered),
    make('gt', ordered),
    make('>=', ordered),
    make('gte', ordered),
    make('<', ordered),
    make('lt', ordered),
    make('<=', ordered),
    make('lte', ordered),
    make('in', list),
    make('not_in', list),
    make('contains', scalar),
    make('not_contains', scalar),
    make('starts_with', fc.constantFrom(...pool.strings)),
    make('ends_with', fc.constantFrom(...pool.strings)),
    make('regex', fc.constantFrom(...PATTERNS)),
    make('between', betweenArb(pool)),
  );
}

/** Conditions of any shape over the given fields; quantifiers switch to element fields inside. */
export function conditionArb(
  fields: readonly string[] = FIELDS,
  maxDepth = 4,
  pool: ValuePool = DEFAULT_POOL,
): fc.Arbitrary<ConditionNode> {
  const tree = fc.letrec<{ node: ConditionNode; element: ConditionNode }>((tie) => ({
    node: fc.oneof(
      { maxDepth, depthIdentifier: 'condition' },
      comparisonArb(fields, pool),
      comparisonArb(fields, pool),
      fc.record({ type: fc.constant('exists' as const), field: fc.constantFrom(...fields) }),
      fc.record({ type: fc.constantFrom('and' as const, 'or' as const), children: fc.array(tie('node'), { minLength: 1, maxLength: 4 }) }),
      fc.record({ type: fc.constant('not' as const), child: tie('node') }),
      fc.record({
        type: fc.constantFrom('any' as const, 'all' as const),
        field: fc.constantFrom(...LIST_FIELDS),
        condition: tie('element'),
      }),
    ),
    element: fc.oneof(
      { maxDepth: 2, depthIdentifier: 'element' },
      comparisonArb(ELEMENT_FIELDS, pool),
      fc.record({ type: fc.constant('exists' as const), field: fc.constantFrom(...ELEMENT_FIELDS) }),
      fc.record({
        type: fc.constantFrom('and' as const, 'or' as const),
        children: fc.array(tie('element'), { minLength: 1, maxLength: 3 }),
      }),
      fc.record({ type: fc.constant('not' as const), child: tie('element') }),
    ),
  }));
  return tree.node;
}

/** The shape indexed matching is built for: a conjunction of comparisons, often equality-gated, sometimes with an `or`. */
export function indexableConditionArb(fields: readonly string[] = FIELDS, pool: ValuePool = DEFAULT_POOL): fc.Arbitrary<ConditionNode> {
  const leaf = comparisonArb(fields, pool);
  const field = fc.constantFrom(...fields);
  const gate = fc.oneof(
    fc.record({ type: fc.constant('condition' as const), field, op: fc.constantFrom<Operator>('==', 'eq'), value: scalarArb(pool) }),
    fc.record({ type: fc.constant('condition' as const), field, op: fc.constant<Operator>('in'), value: listArb(pool) }),
  );
  const range = fc.record({
    type: fc.constant('condition' as const),
    field,
    op: fc.constantFrom<Operator>('>', '>=', '<', '<=', 'gt', 'gte', 'lt', 'lte'),
    value: orderedArb(pool),
  });
  const conjunct = fc.oneof(
    { weight: 3, arbitrary: gate },
    { weight: 3, arbitrary: range },
    { weight: 3, arbitrary: leaf },
    { weight: 1, arbitrary: fc.record({ type: fc.constant('or' as const), children: fc.array(leaf, { minLength: 1, maxLength: 3 }) }) },
    { weight: 1, arbitrary: conditionArb(fields, 2, pool) },
  );
  return fc.oneof(
    leaf,
    fc.record({ type: fc.constant('and' as const), children: fc.array(conjunct, { minLength: 1, maxLength: 5 }) }),
    fc.record({ type: fc.constant('or' as const), children: fc.array(fc.oneof(leaf, conjunct), { minLength: 1, maxLength: 3 }) }),
  );
}

/** Flat facts whose fields are mostly present and mostly scalars from the pool, so gates and bounds meet often. */
export function denseFactsArb(fields: readonly string[], pool: ValuePool): fc.Arbitrary<Record<string, unknown>> {
  const value = fc.oneof({ weight: 10, arbitrary: scalarArb(pool) }, { weight: 1, arbitrary: listArb(pool) });
  return fc.tuple(...fields.map(() => fc.option(value, { nil: undefined, freq: 6 }))).map((values) => {
    const facts: Record<string, unknown> = {};
    fields.forEach((field, index) => {
      if (values[index] !== undefined) facts[field] = values[index];
    });
    return facts;
  });
}

/** Facts with every field optional: nested objects, arrays of elements, a literal `x.y` key, own `__proto__`/`toString`. */
export function factsArbFor(pool: ValuePool): fc.Arbitrary<Record<string, unknown>> {
  const scalar = scalarArb(pool);
  const list = listArb(pool);
  const value: fc.Arbitrary<unknown> = fc.oneof(
    { weight: 8, arbitrary: scalar },
    { weight: 2, arbitrary: list },
    { weight: 1, arbitrary: fc.record({ a: scalar }) },
  );
  const element: fc.Arbitrary<unknown> = fc.oneof(
    { weight: 5, arbitrary: fc.record({ sku: scalar, qty: scalar, tags: list }, { requiredKeys: [] }) },
    { weight: 1, arbitrary: scalar },
    { weight: 1, arbitrary: list },
  );
  const elements = fc.oneof({ weight: 5, arbitrary: fc.array(element, { maxLength: 4 }) }, { weight: 1, arbitrary: scalar });
  return fc
    .tuple(
      fc.record(
        {
          a: value,
          b: value,
          n: value,
          s: value,
          flag: value,
          user: fc.oneof(fc.record({ age: value, name: value }, { requiredKeys: [] }), scalar),
          x: fc.record({ y: value }, { requiredKeys: [] }),
          'x.y': value,
          list: fc.oneof(list, scalar),
          tags: list,
          items: elements,
          orders: elements,
          toString: value,
        },
        { requiredKeys: [] },
      ),
      fc.option(value, { nil: undefined }),
    )
    .map(([facts, proto]) => {
      // An own `__proto__` key, as JSON.parse would create it; plain assignment would change the prototype instead.
      if (proto !== undefined)
        Object.defineProperty(facts, '__proto__', { value: proto, enumerable: true, writable: true, configurable: true });
      return facts;
    });
}

export const factsArb = factsArbFor(DEFAULT_POOL);

export interface RuleArbOptions {
  condition?: fc.Arbitrary<ConditionNode>;
  minRules?: number;
  maxRules?: number;
}

/** Rule sets with unique ids, mixed domains, priorities, actions and some disabled rules. */
export function rulesArb(options: RuleArbOptions = {}): fc.Arbitrary<RuleInput[]> {
  const condition = options.condition ?? fc.oneof(conditionArb(), indexableConditionArb());
  const rule = fc.record({
    condition_dsl: condition,
    domain: fc.constantFrom(...DOMAINS),
    priority: fc.integer({ min: -1, max: 2 }),
    enabled: fc.oneof({ weight: 5, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
    action: fc.constantFrom(...ACTIONS),
  });
  return fc
    .tuple(
      fc.array(rule, { minLength: options.minRules ?? 1, maxLength: options.maxRules ?? 25 }),
      fc.uniqueArray(fc.integer({ min: 1, max: 10_000 }), { minLength: options.maxRules ?? 25, maxLength: options.maxRules ?? 25 }),
    )
    .map(([rules, ids]) => rules.map((rule, index) => ({ id: ids[index]!, name: `rule-${ids[index]}`, ...rule })));
}
