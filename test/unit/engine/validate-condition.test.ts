import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { conditionNodeSchema, DSL_LIMITS } from '../../../src/contracts/condition-dsl.ts';
import { validateCondition } from '../../../src/engine/index.ts';
import { conditionArb } from '../../helpers/random-rules.ts';

const leaf = (field = 'amount', op = '>', value: unknown = 5) => ({ type: 'condition', field, op, value });

function nested(depth: number): unknown {
  let node: unknown = leaf();
  for (let i = 1; i < depth; i++) node = { type: 'not', child: node };
  return node;
}

describe('validateCondition accepts', () => {
  it('every node type and operator alias', () => {
    const dsl = {
      type: 'and',
      children: [
        leaf('amount', 'gte', 10),
        { type: 'or', children: [leaf('country', 'in', ['US', 'CA']), leaf('country', '==', null)] },
        { type: 'not', child: leaf('name', 'regex', '^a[0-9]+$') },
        { type: 'exists', field: 'user.email' },
        { type: 'any', field: 'items', condition: leaf('sku', 'starts_with', 'A') },
        { type: 'all', field: 'items', condition: leaf('qty', 'between', [1, 10]) },
      ],
    };
    expect(validateCondition(dsl)).toEqual({ valid: true, errors: [] });
  });

  it('nesting exactly at the depth limit and lists exactly at the size limit', () => {
    expect(validateCondition(nested(DSL_LIMITS.maxDepth)).valid).toBe(true);
    expect(validateCondition(leaf('a', 'in', new Array(DSL_LIMITS.maxListSize).fill(1))).valid).toBe(true);
  });
});

describe('validateCondition reports', () => {
  it('a non-object input with one error at root', () => {
    for (const input of [5, 'x', null, undefined, [], true]) {
      const result = validateCondition(input);
      expect(result.valid).toBe(false);
      expect(result.errors).toHaveLength(1);
      expect(result.errors[0]?.path).toBe('root');
    }
  });

  it('an unknown node type with the list of allowed types', () => {
    expect(validateCondition({ type: 'xor', children: [] })).toEqual({
      valid: false,
      errors: [
        { path: 'root.type', message: 'unknown node type "xor": expected one of condition, and, or, not, exists, any, all, accumulate' },
      ],
    });
    expect(validateCondition({ field: 'a' }).errors).toEqual([
      { path: 'root.type', message: 'type is required: one of condition, and, or, not, exists, any, all, accumulate' },
    ]);
  });

  it('every problem of a tree, each with its path', () => {
    const result = validateCondition({
      type: 'and',
      children: [
        leaf('a', 'zz', 1),
        leaf('', '>', [1]),
        { type: 'not', child: { type: 'any', field: 'x', condition: { type: 'exists', field: 3, extra: 1 } } },
      ],
    });
    expect(result.valid).toBe(false);
    expect(result.errors).toEqual([
      { path: 'root.children[0].op', message: expect.stringMatching(/^unknown operator "zz": expected one of ==, !=, >/) },
      { path: 'root.children[1].field', message: 'field must be a non-empty path' },
      { path: 'root.children[1].value', message: 'operator > takes a number or a string' },
      { path: 'root.children[2].child.condition.field', message: 'Invalid input: expected string, received number' },
      { path: 'root.children[2].child.condition.extra', message: 'unknown key "extra"' },
    ]);
  });

  it('problems between keys even where another key of the node has the wrong type', () => {
    expect(validateCondition({ type: 'accumulate', function: 'sum', op: 'between', value: [10, 1], window_seconds: '600' }).errors).toEqual(
      [
        { path: 'root.window_seconds', message: 'Invalid input: expected number, received string' },
        { path: 'root.field', message: 'function sum needs a field: the numeric fact field it aggregates' },
        { path: 'root.value', message: 'operator between needs low <= high' },
      ],
    );
    // The function's need of a field whatever the operator, and the operator's need of its value whatever the function.
    expect(validateCondition({ type: 'accumulate', function: 'sum', op: 'xx', value: 5 }).errors).toEqual([
      { path: 'root.op', message: expect.stringMatching(/^unknown operator "xx" for accumulate/) },
      { path: 'root.field', message: 'function sum needs a field: the numeric fact field it aggregates' },
    ]);
    expect(validateCondition({ type: 'accumulate', function: 'median', op: 'between', value: 5, field: 'a' }).errors).toEqual([
      { path: 'root.function', message: expect.stringMatching(/^unknown function "median"/) },
      { path: 'root.value', message: 'operator between takes [low, high] numbers' },
    ]);
    expect(validateCondition({ type: 'accumulate', function: 'sum', op: 'between', value: [1, 2, 3] }).errors).toEqual([
      { path: 'root.value', message: 'value must be a finite number, or [low, high] numbers for between' },
      { path: 'root.field', message: 'function sum needs a field: the numeric fact field it aggregates' },
    ]);
    expect(validateCondition({ type: 'condition', field: ['amount'], op: 'between', value: [5000, 100] }).errors).toEqual([
      { path: 'root.field', message: 'Invalid input: expected string, received array' },
      { path: 'root.value', message: 'operator between needs low <= high' },
    ]);
  });

  it('text limits in characters (code points), an emoji counting one, as the zod schema and JSON Schema count', () => {
    const emoji = '\u{1F600}';
    expect(validateCondition(leaf('a', '==', emoji.repeat(10_000))).valid).toBe(true);
    expect(validateCondition(leaf('a', '==', `${emoji.repeat(10_000)}x`)).errors).toEqual([
      { path: 'root.value', message: 'value is too large: strings hold at most 10000 characters' },
    ]);
    expect(validateCondition(leaf('a', 'in', [`${emoji.repeat(10_000)}x`])).valid).toBe(false);
    expect(validateCondition(leaf(emoji.repeat(256), '==', 1)).valid).toBe(true);
    expect(validateCondition(leaf(emoji.repeat(257), '==', 1)).errors).toEqual([
      { path: 'root.field', message: 'field must be at most 256 characters' },
    ]);
  });

  it('values that do not suit their operator', () => {
    const cases: [unknown, string][] = [
      [leaf('a', '==', [1, 2]), 'operator == takes a single value, not an array'],
      [leaf('a', 'in', 'US'), 'operator in takes an array of values'],
      [leaf('a', 'starts_with', 5), 'operator starts_with takes a string'],
      [leaf('a', 'between', [1]), 'operator between takes [low, high]'],
      [leaf('a', 'between', [1, 'b']), 'operator between takes two numbers or two strings'],
      [leaf('a', 'between', [5, 1]), 'operator between needs low <= high'],
      [leaf('a', 'regex', 5), 'operator regex takes a pattern string'],
      [leaf('a', '==', { nested: true }), 'value must be a string, a finite number, a boolean, null, or a list of those'],
    ];
    for (const [dsl, message] of cases) expect(validateCondition(dsl).errors).toEqual([{ path: 'root.value', message }]);
  });

  it('an empty and/or, a missing child and a wrong children type', () => {
    expect(validateCondition({ type: 'or', children: [] }).errors).toEqual([
      { path: 'root.children', message: 'needs at least one child' },
    ]);
    expect(validateCondition({ type: 'not' }).errors).toEqual([
      { path: 'root.child', message: expect.stringContaining('expected object') },
    ]);
    expect(validateCondition({ type: 'and', children: 'x' }).errors[0]?.path).toBe('root.children');
  });

  it('a field longer than the limit and a string value longer than the limit', () => {
    expect(validateCondition(leaf('f'.repeat(DSL_LIMITS.maxFieldLength + 1))).errors[0]?.path).toBe('root.field');
    expect(validateCondition(leaf('a', '==', 's'.repeat(DSL_LIMITS.maxStringLength + 1))).errors).toEqual([
      { path: 'root.value', message: expect.stringContaining('too large') },
    ]);
    // The same words for a string in a list, whose path ends in its index.
    expect(validateCondition(leaf('a', 'in', ['ok', 's'.repeat(DSL_LIMITS.maxStringLength + 1)])).errors).toEqual([
      { path: 'root.value[1]', message: `value is too large: strings hold at most ${DSL_LIMITS.maxStringLength} characters` },
    ]);
  });

  it('a list longer than the limit', () => {
    const result = validateCondition(leaf('a', 'in', new Array(DSL_LIMITS.maxListSize + 1).fill(1)));
    expect(result.errors).toEqual([{ path: 'root.value', message: expect.stringContaining(`at most ${DSL_LIMITS.maxListSize} values`) }]);
  });

  it('nesting deeper than the limit, at the first node too deep', () => {
    const result = validateCondition(nested(DSL_LIMITS.maxDepth + 1));
    expect(result.valid).toBe(false);
    expect(result.errors).toEqual([
      { path: `root${'.child'.repeat(DSL_LIMITS.maxDepth)}`, message: 'conditions are nested deeper than 32 levels' },
    ]);
  });

  it('a 100,000-deep input without overflowing the stack', () => {
    const result = validateCondition(nested(100_000));
    expect(result.valid).toBe(false);
    expect(result.errors.map((error) => error.message)).toEqual(['conditions are nested deeper than 32 levels']);
  });

  it('other problems next to a depth problem', () => {
    const result = validateCondition({ type: 'and', children: [leaf('a', 'bad', 1), nested(DSL_LIMITS.maxDepth + 5)] });
    expect(result.errors.map((error) => error.path)).toEqual([
      'root.children[0].op',
      `root.children[1]${'.child'.repeat(DSL_LIMITS.maxDepth - 1)}`,
    ]);
  });

  it('more nodes than the limit, once, at root', () => {
    const children = Array.from({ length: DSL_LIMITS.maxNodes }, () => leaf());
    expect(validateCondition({ type: 'and', children: children.slice(0, DSL_LIMITS.maxNodes - 1) }).valid).toBe(true);
    expect(validateCondition({ type: 'and', children }).errors).toEqual([{ path: 'root', message: 'condition has more than 1000 nodes' }]);
  });

  it('a regex that does not compile', () => {
    expect(validateCondition(leaf('name', 'regex', '(unclosed')).errors).toEqual([
      { path: 'root.value', message: expect.stringMatching(/^invalid regular expression: .*Unterminated group/) },
    ]);
  });

  it('a regex that can backtrack catastrophically', () => {
    for (const pattern of ['(a+)+$', '(x+x+)+y', '(a|aa)*b*c*d*(e+)+']) {
      const result = validateCondition({ type: 'not', child: leaf('name', 'regex', pattern) });
      expect(result.errors).toEqual([{ path: 'root.child.value', message: expect.stringContaining('backtrack catastrophically') }]);
    }
  });

  it('a regex that cannot run in linear time, so excessive backtracking could not be handed over', () => {
    for (const pattern of ['([a-z]|[a-z0-9]){1,30}@', '^(?=(a|a)*$)', '(a)\\1', '^\\d{10,20}$']) {
      const result = validateCondition(leaf('name', 'regex', pattern));
      expect(result.errors, pattern).toEqual([{ path: 'root.value', message: expect.stringContaining('cannot be bounded in time') }]);
      // A rule already stored under the earlier checks still compiles.
      expect(validateCondition(leaf('name', 'regex', pattern), { stored: true }).valid, pattern).toBe(true);
    }
    expect(validateCondition(leaf('name', 'regex', '^\\d{10,16}\\d{0,4}$')).valid).toBe(true);
  });

  it('a regex larger than 256 characters, a part repeated n times counting n times, in a new rule only', () => {
    const list = `^(${Array.from({ length: 70 }, (_, i) => `c${String(i).padStart(3, '0')}`).join('|')})$`;
    // 60 characters, but the 26 alternatives are repeated 16 times: 115 ms a search over 10,000 characters.
    const repeated = `(?:${'abcdefghijklmnopqrstuvwxyz'.split('').join('|')}){16}!`;
    // A class of 300 characters repeated: 300 ranges to look through at every step of a search.
    const classes = `[${'\u4e00\u4e02\u4e04'.repeat(100)}]z`;
    for (const pattern of [list, repeated, classes]) {
      expect(validateCondition(leaf('name', 'regex', pattern)).errors, pattern).toEqual([
        {
          path: 'root.value',
          message: expect.stringContaining('must be at most 256 characters, a part repeated n times (x{n}) counting n times'),
        },
      ]);
      expect(validateCondition(leaf('name', 'regex', pattern), { stored: true }).valid).toBe(true);
    }
    // Characters, not UTF-16 units: 256 emoji are 512 units and still fit.
    expect(validateCondition(leaf('name', 'regex', '😀'.repeat(256))).valid).toBe(true);
    expect(validateCondition(leaf('name', 'regex', '[a-z]{16}[0-9]{16}')).valid).toBe(true);
  });

  it('exotic inputs without throwing', () => {
    const throwing = {
      type: 'condition',
      get field(): string {
        throw new Error('boom');
      },
      op: '>',
      value: 1,
    };
    expect(validateCondition(throwing).valid).toBe(false);
    const revoked = Proxy.revocable({}, {});
    revoked.revoke();
    expect(validateCondition(revoked.proxy).valid).toBe(false);
    expect(validateCondition({ type: 'exists', field: 'a', extra: undefined }).errors).toEqual([
      { path: 'root.extra', message: 'unknown key "extra"' },
    ]);
  });
});

describe('validateCondition and the zod schema of the contract', () => {
  it('agree on every generated valid condition', () => {
    fc.assert(
      fc.property(conditionArb(), (condition) => {
        expect(validateCondition(condition).valid).toBe(true);
        expect(conditionNodeSchema.safeParse(condition).success).toBe(true);
      }),
      { seed: 3, numRuns: 300 },
    );
  });

  it('agree on arbitrary junk and on broken conditions', () => {
    const junk = fc.oneof(
      fc.anything(),
      conditionArb().chain((condition) =>
        fc.constantFrom<unknown>(
          { ...condition, extra: 1 },
          { ...condition, type: 'nope' },
          { type: 'and', children: [condition, 5] },
          { type: 'not', child: { ...condition, field: '' } },
          { type: 'any', field: 'items', condition: { type: 'condition', field: 'a', op: '>', value: true } },
        ),
      ),
    );
    fc.assert(
      fc.property(junk, (input) => {
        const result = validateCondition(input);
        expect(result.valid).toBe(conditionNodeSchema.safeParse(input).success);
        expect(result.valid).toBe(result.errors.length === 0);
      }),
      { seed: 5, numRuns: 500 },
    );
  });
});
