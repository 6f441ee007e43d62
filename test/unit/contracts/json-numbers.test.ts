import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { mayHoldHugeNumber, nonFiniteNumberPath } from '../../../src/contracts/json-numbers.ts';

// JSON number text: an optional minus, 1 to 420 integer digits, an optional fraction and an optional exponent (0 to 999,
// with leading zeros at times), so lengths and exponents near the edge of the range come up often.
const numberText = fc
  .tuple(
    fc.boolean(),
    fc.integer({ min: 1, max: 9 }),
    fc.integer({ min: 0, max: 419 }),
    fc.integer({ min: 0, max: 9 }),
    fc.option(fc.stringMatching(/^[0-9]{1,30}$/), { nil: undefined }),
    fc.option(
      fc.tuple(fc.constantFrom('e', 'E'), fc.constantFrom('', '+', '-'), fc.constantFrom('', '0', '00'), fc.integer({ min: 0, max: 999 })),
      {
        nil: undefined,
      },
    ),
  )
  .map(([minus, first, more, digit, fraction, exponent]) => {
    const mantissa = `${first}${String(digit).repeat(more)}${fraction === undefined ? '' : `.${fraction}`}`;
    return `${minus ? '-' : ''}${mantissa}${exponent === undefined ? '' : exponent.join('')}`;
  });

describe('mayHoldHugeNumber', () => {
  it('lets no number past the range of a double through: text it clears always parses finite', () => {
    fc.assert(
      fc.property(numberText, (text) => {
        if (!mayHoldHugeNumber(`{"n":${text}}`)) expect(Number.isFinite(JSON.parse(text))).toBe(true);
      }),
      { numRuns: 5_000 },
    );
  });

  it('clears the usual body', () => {
    expect(mayHoldHugeNumber('{"facts":{"amount":7200.5,"score":1e-7,"big":1.5e300,"email":"e123@example.com"}}')).toBe(true);
    expect(mayHoldHugeNumber('{"facts":{"amount":7200.5,"score":1e-7,"big":1.5e30,"country":"FR"}}')).toBe(false);
  });
});

describe('nonFiniteNumberPath', () => {
  it('names the first number that is not finite, in objects and arrays', () => {
    expect(nonFiniteNumberPath({ facts: { a: [1, 2, Number.POSITIVE_INFINITY] } })).toBe('facts.a[2]');
    expect(nonFiniteNumberPath(Number.NEGATIVE_INFINITY)).toBe('');
    expect(nonFiniteNumberPath({ facts: { a: 1, b: 'Infinity' } })).toBeUndefined();
  });
});
