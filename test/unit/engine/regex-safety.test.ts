import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileRegex, LINEAR_SEARCH_FROM, patternSize, repeatsWithoutBound } from '../../../src/engine/regex-safety.ts';

describe('repeatsWithoutBound', () => {
  it.each([
    ['a*x', true],
    ['\\w+@example\\.com', true],
    ['^\\d{3,}$', true],
    ['(ab)+', true],
    ['fraud|scam', false],
    ['\\d{4}-\\d{2}-\\d{2}', false],
    ['x{1,16}', false],
    ['a\\*b\\+', false],
    ['[*+]x', false],
    ['[\\]*]x', false],
    ['[]*x', true],
    ['\\\\*', true],
    ['a{2,', false],
    ['{3,}', true],
  ])('%s: %s', (pattern, expected) => {
    expect(repeatsWithoutBound(pattern)).toBe(expected);
  });
});

describe('patternSize', () => {
  it.each([
    ['abc', 3],
    ['x{16}', 17],
    ['(?:ab|c){3}', 13],
    ['[a-z]{2,}', 10],
    ['[]x', 2],
    ['[^abc]', 4],
    ['\\d{3}-\\d{4}', 10],
    ['a*x', 3],
    ['(?<name>ab)c', 4],
    ['(?<=a)b', 3],
    ['[\\]]{3}', 7],
    ['😀😀😀', 3],
    ['(a{0})b', 4],
    // Thousands of ranges in one class made a search slow while counting one.
    [`[${'\u4e00\u4e02'.repeat(100)}]{16}z`, 3_202],
    [`(?:${'abcdefghijklmnopqrstuvwxyz'.split('').join('|')}){16}!`, 434],
  ])('%s: %i', (pattern, expected) => {
    expect(patternSize(pattern)).toBe(expected);
  });
});

describe('compileRegex', () => {
  const patterns = ['a*x', '\\w+@example\\.com$', '^[a-z]+@[a-z]+\\.com$', '(foo|bar) baz', 'b+c', '[ab]*c{2,}'];
  const texts = fc.oneof(
    fc.string({ unit: fc.constantFrom('a', 'b', 'c', 'x', '@', '.', ' ', 'f', 'o'), maxLength: 40 }),
    // Past LINEAR_SEARCH_FROM: the long texts the linear-time engine searches must match exactly as before.
    fc
      .tuple(fc.constantFrom('a', 'b', 'ab'), fc.string({ unit: fc.constantFrom('a', 'b', 'c', 'x', '@'), maxLength: 20 }))
      .map(([run, tail]) => run.repeat(Math.ceil((LINEAR_SEARCH_FROM + 1) / run.length)) + tail),
  );

  it('finds what RegExp.prototype.test finds, on short and long texts', () => {
    const searches = patterns.map((pattern) => [new RegExp(pattern), compileRegex(pattern)] as const);
    fc.assert(
      fc.property(texts, (text) => {
        for (const [regex, search] of searches) expect(search(text), `${regex} on ${text.length} characters`).toBe(regex.test(text));
      }),
    );
  });

  it('still runs a stored pattern the linear-time engine cannot run, on a long text too', () => {
    const search = compileRegex('(a+)\\1x');
    expect(search(`${'a'.repeat(LINEAR_SEARCH_FROM + 10)}x`)).toBe(true);
    expect(search('ax')).toBe(false);
  });
});
