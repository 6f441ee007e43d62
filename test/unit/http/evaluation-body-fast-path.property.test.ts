// The evaluate and bulk bodies' fast paths must accept only what their zod schemas accept, and hand on the very value zod would.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { MAX_FACT_DEPTH } from '../../../src/contracts/json-depth.ts';
import { isCommonDomain } from '../../../src/contracts/rule.ts';
import type { AppError } from '../../../src/errors.ts';
import { isCommonFacts } from '../../../src/http/schemas/common.ts';
import { bulkBody, evaluateBody, isCommonBulkBody, isCommonEvaluateBody } from '../../../src/http/schemas/evaluation.ts';
import { zodValidatorCompiler } from '../../../src/http/zod-compilers.ts';

/** What Fastify does with a validator's answer: true keeps the body, {value} replaces it, {error} rejects. */
function validatorOf(schema: z.ZodType): (body: unknown) => { body: unknown } | { error: AppError } {
  const validator = zodValidatorCompiler({ schema, method: 'POST', url: '/api/v1/evaluate', httpPart: 'body' });
  return (body) => {
    const answer = validator(body) as true | { value?: unknown; error?: AppError };
    if (answer === true) return { body };
    if (answer.error !== undefined) return { error: answer.error };
    return { body: answer.value };
  };
}

function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let level = 0; level < depth; level++) value = level % 2 === 0 ? { n: value } : [value];
  return value;
}

const whitespace = fc.constantFrom(' ', '\t', '\n', '\u00a0', '\u2028', '\ufeff', '\u3000');
const domainArb = fc.oneof(
  fc.string({ maxLength: 8 }),
  fc.string({ minLength: 98, maxLength: 102 }),
  fc
    .tuple(fc.option(whitespace, { nil: '' }), fc.string({ maxLength: 5 }), fc.option(whitespace, { nil: '' }))
    .map((parts) => parts.join('')),
  fc.jsonValue({ maxDepth: 1 }),
);
const keyArb = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.constantFrom('__proto__', 'constructor', 'toString', 'prototype', '0', 'facts', 'domain'),
);
const oneFactArb = fc.oneof(
  fc.dictionary(keyArb, fc.jsonValue({ maxDepth: 3 }), { maxKeys: 6 }),
  fc.integer({ min: MAX_FACT_DEPTH - 3, max: MAX_FACT_DEPTH + 1 }).map((depth) => ({ deep: nested(depth) })),
  fc.jsonValue({ maxDepth: 2 }),
);
const manyFactsArb = fc.oneof(
  fc.array(oneFactArb, { maxLength: 4 }),
  fc.array(fc.dictionary(keyArb, fc.jsonValue({ maxDepth: 2 }))),
  oneFactArb,
);

/** Bodies near the valid shape (missing or extra keys, odd domains and facts), as JSON text so they are what the parser gives. */
function bodyTextArb(factsArb: fc.Arbitrary<unknown>): fc.Arbitrary<string> {
  return fc.oneof(
    fc.record({ facts: factsArb, domain: domainArb }, { requiredKeys: [] }).map((body) => JSON.stringify(body)),
    fc
      .tuple(factsArb, fc.option(domainArb), keyArb, fc.jsonValue({ maxDepth: 1 }))
      .map(([facts, domain, key, extra]) => JSON.stringify({ [key]: extra, facts, ...(domain === null ? {} : { domain }) })),
    fc.constantFrom(
      '{"facts":{"__proto__":{"a":1}}}',
      '{"facts":[{"__proto__":{"a":1}}]}',
      '{"__proto__":{},"facts":{}}',
      '{"facts":{"constructor":{"prototype":1}}}',
      '{"facts":[{"constructor":1}]}',
      '{"domain":"payments","facts":{"a":1}}',
      '{"domain":"payments","facts":[{"a":1},{}]}',
      '{"facts":{},"domain":""}',
      '{"facts":[],"domain":null}',
      '[]',
      'null',
      '"facts"',
    ),
    fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value)),
  );
}

describe.each([
  { name: 'evaluate', schema: evaluateBody as z.ZodType, accept: isCommonEvaluateBody, bodies: bodyTextArb(oneFactArb) },
  { name: 'bulk', schema: bulkBody as z.ZodType, accept: isCommonBulkBody, bodies: bodyTextArb(manyFactsArb) },
])('the $name body fast path', ({ schema, accept, bodies }) => {
  const validated = validatorOf(schema);
  // A copy of the schema has no fast path: what the schema alone would answer.
  const schemaOnly = validatorOf(schema.clone());

  it('accepts only bodies the schema accepts, and keeps them as the schema would return them', () => {
    let accepted = 0;
    fc.assert(
      fc.property(bodies, (text) => {
        const body: unknown = JSON.parse(text);
        if (!accept(body)) return;
        accepted++;
        const parsed = schema.safeParse(body);
        expect(parsed.success).toBe(true);
        expect(body).toStrictEqual(parsed.data);
      }),
      { numRuns: 5_000 },
    );
    // The property says something only if the fast path took a fair share of the bodies.
    // Bulk bodies pass about 230 times in 5,000 (evaluate ones about 420): 100 leaves room for chance, none for a
    // generator that stopped producing acceptable bodies.
    expect(accepted).toBeGreaterThan(100);
  });

  it('leaves Fastify the same body or the same error as the schema alone', () => {
    fc.assert(
      fc.property(bodies, (text) => {
        const parsed = schema.safeParse(JSON.parse(text));
        const answer = validated(JSON.parse(text));
        // toEqual: a fact named constructor makes two equal parses differ in toStrictEqual's eyes.
        if (parsed.success) expect(answer).toEqual({ body: parsed.data });
        else expect(answer).toEqual(schemaOnly(JSON.parse(text)));
      }),
      { numRuns: 2_000 },
    );
  });
});

describe('the fast paths', () => {
  const validEvaluate = validatorOf(evaluateBody);
  const validBulk = validatorOf(bulkBody);
  const usualFacts = fc.dictionary(
    fc.string({ minLength: 1, maxLength: 8 }).filter((key) => key !== '__proto__' && key !== 'constructor'),
    fc.jsonValue({ maxDepth: 4 }),
  );
  const usualDomain = fc.option(fc.stringMatching(/^[a-z][a-z0-9-]{0,30}$/), { nil: undefined });

  it('are taken for the usual bodies', () => {
    fc.assert(
      fc.property(usualFacts, fc.array(usualFacts, { maxLength: 5 }), usualDomain, (facts, many, domain) => {
        const body = (value: unknown) => JSON.parse(JSON.stringify(domain === undefined ? { facts: value } : { facts: value, domain }));
        expect(isCommonEvaluateBody(body(facts))).toBe(true);
        expect(isCommonBulkBody(body(many))).toBe(true);
      }),
    );
  });

  it('leave every rejection, and its wording, to the schema', () => {
    expect(validEvaluate({ facts: [] })).toMatchObject({
      error: { code: 'VALIDATION_ERROR', message: 'body.facts: Invalid input: expected record, received array' },
    });
    expect(validEvaluate({ facts: {}, domain: '' })).toMatchObject({ error: { message: 'body.domain: domain must not be empty' } });
    expect(validEvaluate({ facts: { deep: nested(MAX_FACT_DEPTH) } })).toMatchObject({
      error: { message: `body.facts: must not be nested deeper than ${MAX_FACT_DEPTH} levels` },
    });
    expect(validEvaluate({ facts: {}, extra: 1 })).toMatchObject({ error: { message: 'body: Unrecognized key: "extra"' } });
    expect(validBulk({ facts: [{}, 'x'] })).toMatchObject({
      error: { message: 'body.facts[1]: Invalid input: expected record, received string' },
    });
  });

  it('hand a domain with spaces around it to the schema, which trims it', () => {
    expect(isCommonDomain(' payments ')).toBe(false);
    expect(validEvaluate({ facts: {}, domain: ' payments ' })).toStrictEqual({ body: { facts: {}, domain: 'payments' } });
    expect(validBulk({ facts: [], domain: 'payments\n' })).toStrictEqual({ body: { facts: [], domain: 'payments' } });
  });

  it('check the fact nesting limit themselves', () => {
    expect(isCommonFacts({ deep: nested(MAX_FACT_DEPTH - 1) })).toBe(true);
    expect(isCommonFacts({ deep: nested(MAX_FACT_DEPTH) })).toBe(false);
  });
});
