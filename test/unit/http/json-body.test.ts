import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { nestsDeeperThan } from '../../../src/contracts/json-depth.ts';
import { AppError } from '../../../src/errors.ts';
import { inspectJson, MAX_BODY_DEPTH, parseJsonBody } from '../../../src/http/json-body.ts';

function rejection(text: string): AppError {
  try {
    parseJsonBody(text);
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error('expected parseJsonBody to throw');
}

const nestedArrays = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

describe('parseJsonBody', () => {
  it('parses a JSON object', () => {
    expect(parseJsonBody('{"facts":{"amount":5,"tags":["a"]}}')).toEqual({ facts: { amount: 5, tags: ['a'] } });
  });

  it('rejects an empty body', () => {
    expect(rejection('  ').toBody()).toEqual({ error_code: 'VALIDATION_ERROR', detail: 'The request body is empty; send a JSON object.' });
  });

  it('rejects malformed JSON, quoting the parser', () => {
    const error = rejection('{"facts":');
    expect(error.code).toBe('VALIDATION_ERROR');
    expect(error.message).toMatch(/^The request body is not valid JSON: /);
  });

  it('rejects a number a double cannot hold, naming where, and keeps the large ones it can', () => {
    expect(rejection('{"facts":{"amount":1e400}}').toBody()).toEqual({
      error_code: 'VALIDATION_ERROR',
      detail: 'The request body holds a number beyond the range of a double (±1.7976931348623157e308) at facts.amount.',
    });
    expect(rejection('{"facts":{"list":[1,-2E+999]}}').message).toMatch(/ at facts\.list\[1\]\.$/);
    expect(rejection(`{"n":${'9'.repeat(400)}}`).message).toMatch(/ at n\.$/);
    // A long mantissa takes a two-digit exponent past the range too.
    expect(rejection(`{"n":1${'0'.repeat(210)}e99}`).message).toMatch(/ at n\.$/);
    expect(rejection(`{"n":-${'9'.repeat(300)}.5e9}`).message).toMatch(/ at n\.$/);
    expect(rejection('1e999').message).toBe('The request body holds a number beyond the range of a double (±1.7976931348623157e308).');
    expect(parseJsonBody('{"a":1.7976931348623157e308,"b":1e-400,"c":"1e400","d":-1e300}')).toEqual({
      a: Number.MAX_VALUE,
      b: 0,
      c: '1e400',
      d: -1e300,
    });
    expect(parseJsonBody(`{"n":${'9'.repeat(308)}}`)).toEqual({ n: Number(`${'9'.repeat(308)}`) });
  });

  it('rejects an own __proto__ key anywhere, naming where', () => {
    const error = rejection('{"facts":{"user":{"__proto__":{"admin":true}}}}');
    expect(error.code).toBe('VALIDATION_ERROR');
    expect(error.message).toBe('The request body contains the forbidden key "__proto__" at facts.user.__proto__.');
  });

  it('rejects a constructor object carrying prototype, inside arrays too', () => {
    const error = rejection('{"facts":[{"constructor":{"prototype":{"x":1}}}]}');
    expect(error.message).toBe('The request body contains the forbidden key "constructor" at facts[0].constructor.');
  });

  it('accepts the words __proto__ and constructor as values, and a plain constructor field', () => {
    expect(parseJsonBody('{"facts":{"a":"__proto__","constructor":"x"}}')).toEqual({ facts: { a: '__proto__', constructor: 'x' } });
  });

  it(`accepts ${MAX_BODY_DEPTH} levels and rejects one more`, () => {
    expect(parseJsonBody(nestedArrays(MAX_BODY_DEPTH))).toBeInstanceOf(Array);
    expect(rejection(nestedArrays(MAX_BODY_DEPTH + 1)).message).toBe(`The request body is nested deeper than ${MAX_BODY_DEPTH} levels.`);
  });

  it('rejects half a million levels of nesting without overflowing the stack', () => {
    expect(rejection(nestedArrays(500_000)).code).toBe('VALIDATION_ERROR');
    expect(rejection(`${'{"a":'.repeat(200_000)}1${'}'.repeat(200_000)}`).code).toBe('VALIDATION_ERROR');
  });
});

describe('nestsDeeperThan', () => {
  it.each([
    [1, 0, false],
    [{}, 1, false],
    [{}, 0, true],
    [{ a: { b: [1] } }, 3, false],
    [{ a: { b: [1] } }, 2, true],
    [[[], [[]]], 2, true],
  ])('%j deeper than %d: %s', (value, limit, expected) => {
    expect(nestsDeeperThan(value, limit)).toBe(expected);
  });

  it('agrees with counting the levels', () => {
    const levels = (value: unknown): number =>
      typeof value !== 'object' || value === null
        ? 0
        : 1 + Math.max(0, ...(Array.isArray(value) ? value : Object.values(value)).map(levels));
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), fc.integer({ min: 0, max: 8 }), (value, limit) => {
        expect(nestsDeeperThan(value, limit)).toBe(levels(value) > limit);
      }),
    );
  });

  it("measures nesting far past the recursive walk's limits without overflowing the stack", () => {
    let value: unknown[] = [];
    for (let level = 1; level < 300_000; level++) value = [value];
    expect(nestsDeeperThan(value, 300_000)).toBe(false);
    expect(nestsDeeperThan(value, 299_999)).toBe(true);
    expect(nestsDeeperThan(value, 128)).toBe(true);
  });
});

describe('inspectJson', () => {
  it('skips the key check when told the text has no suspicious key', () => {
    expect(inspectJson(JSON.parse('{"__proto__":1}'), 10, false)).toBeUndefined();
    expect(inspectJson(JSON.parse('{"__proto__":1}'), 10, true)).toContain('__proto__');
  });
});
