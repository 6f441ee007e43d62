import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_FACT_DEPTH } from '../../../src/contracts/json-depth.ts';
import { factMessageSchema } from '../../../src/contracts/kafka-messages.ts';
import { fastFactMessage } from '../../../src/kafka/fact-fast-check.ts';

const text = fc.oneof(
  fc.string({ maxLength: 5 }),
  fc.constantFrom('payments', ' padded ', '', ' ', 'x'.repeat(100), 'x'.repeat(101), 'y'.repeat(200), 'y'.repeat(201)),
);
const scalar = fc.oneof(text, fc.integer(), fc.boolean(), fc.constant(null), fc.constant(undefined));
const facts = fc.oneof(
  fc.dictionary(fc.string({ maxLength: 4 }), fc.jsonValue({ maxDepth: 3 })),
  fc.array(scalar, { maxLength: 2 }),
  scalar,
);
const message = fc.oneof(
  fc.record({ facts, domain: scalar, session_id: scalar, fact_id: scalar, extra: scalar }, { requiredKeys: [] }),
  scalar,
  fc.array(scalar, { maxLength: 2 }),
);

describe('fastFactMessage', () => {
  it('accepts only what the schema accepts, and returns what the schema returns', () => {
    fc.assert(
      fc.property(message, (value) => {
        const fast = fastFactMessage(value);
        const parsed = factMessageSchema.safeParse(value);
        if (fast !== undefined) {
          expect(parsed.success).toBe(true);
          expect(fast).toEqual(parsed.data);
        }
      }),
      { numRuns: 2_000 },
    );
  });

  it('takes the common valid message without the schema', () => {
    expect(fastFactMessage({ facts: { amount: 1, nested: { a: [1, 2] } }, domain: 'payments' })).toEqual({
      facts: { amount: 1, nested: { a: [1, 2] } },
      domain: 'payments',
    });
    expect(fastFactMessage({ facts: {}, domain: null, session_id: 's', fact_id: null })).toEqual({
      facts: {},
      domain: null,
      session_id: 's',
      fact_id: null,
    });
  });

  it('leaves unusual and invalid messages to the schema', () => {
    expect(fastFactMessage({ facts: {}, domain: ' padded ' })).toBeUndefined();
    expect(fastFactMessage({ facts: [] })).toBeUndefined();
    expect(fastFactMessage({ facts: {}, other: 1 })).toBeUndefined();
    expect(fastFactMessage({ facts: new Date() })).toBeUndefined();
    expect(fastFactMessage('text')).toBeUndefined();
  });

  it('agrees with the schema on the nesting limit, through objects and arrays', () => {
    // A fact of `levels` levels: the fact object is level 1, each wrapper one more.
    const nested = (levels: number, wrap: (inner: unknown) => unknown) => {
      let inner: unknown = 1;
      for (let level = 1; level < levels; level++) inner = wrap(inner);
      return { facts: { deep: inner } };
    };
    for (const wrap of [(inner: unknown) => ({ a: inner }), (inner: unknown) => [0, inner]]) {
      for (const levels of [MAX_FACT_DEPTH, MAX_FACT_DEPTH + 1, MAX_FACT_DEPTH + 2]) {
        const value = nested(levels, wrap);
        const fast = fastFactMessage(value);
        const parsed = factMessageSchema.safeParse(value);
        if (fast !== undefined) expect(fast).toEqual(parsed.data);
        expect(fast !== undefined).toBe(parsed.success);
      }
    }
  });
});
