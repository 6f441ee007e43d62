// The evaluate body's fast path must accept only what the zod schema accepts, and hand on the very value zod would.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AppError } from '../../../src/errors.ts';
import { isCommonDomain, isCommonFacts, MAX_FACT_DEPTH } from '../../../src/http/schemas/common.ts';
import { evaluateBody, isCommonEvaluateBody } from '../../../src/http/schemas/evaluation.ts';
import { zodValidatorCompiler } from '../../../src/http/zod-compilers.ts';

const validator = zodValidatorCompiler({ schema: evaluateBody, method: 'POST', url: '/api/v1/evaluate', httpPart: 'body' });

/** What Fastify does with a validator's answer: true keeps the body, {value} replaces it, {error} rejects. */
function validated(body: unknown): { body: unknown } | { error: AppError } {
  const answer = validator(body) as true | { value?: unknown; error?: AppError };
  if (answer === true) return { body };
  if (answer.error !== undefined) return { error: answer.error };
  return { body: answer.value };
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
const factsArb = fc.oneof(
  fc.dictionary(keyArb, fc.jsonValue({ maxDepth: 3 }), { maxKeys: 6 }),
  fc.integer({ min: MAX_FACT_DEPTH - 3, max: MAX_FACT_DEPTH + 1 }).map((depth) => ({ deep: nested(depth) })),
  fc.jsonValue({ maxDepth: 2 }),
);
/** Bodies near the valid shape (missing or extra keys, odd domains and facts), as JSON text so they are what the parser gives. */
const bodyTextArb = fc.oneof(
  fc.record({ facts: factsArb, domain: domainArb }, { requiredKeys: [] }).map((body) => JSON.stringify(body)),
  fc
    .tuple(factsArb, fc.option(domainArb), keyArb, fc.jsonValue({ maxDepth: 1 }))
    .map(([facts, domain, key, extra]) => JSON.stringify({ [key]: extra, facts, ...(domain === null ? {} : { domain }) })),
  fc.constantFrom(
    '{"facts":{"__proto__":{"a":1}}}',
    '{"__proto__":{},"facts":{}}',
    '{"facts":{"constructor":{"prototype":1}}}',
    '{"facts":{"constructor":1}}',
    '{"domain":"payments","facts":{"a":1}}',
    '{"facts":{},"domain":""}',
    '{"facts":{},"domain":null}',
    '[]',
    'null',
    '"facts"',
  ),
  fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value)),
);

describe('the evaluate body fast path', () => {
  it('accepts only bodies the schema accepts, and keeps them as the schema would return them', () => {
    let accepted = 0;
    fc.assert(
      fc.property(bodyTextArb, (text) => {
        const body: unknown = JSON.parse(text);
        if (!isCommonEvaluateBody(body)) return;
        accepted++;
        const parsed = evaluateBody.safeParse(body);
        expect(parsed.success).toBe(true);
        expect(body).toStrictEqual(parsed.data);
      }),
      { numRuns: 5_000 },
    );
    // The property says something only if the fast path took a fair share of the bodies.
    expect(accepted).toBeGreaterThan(200);
  });

  it('leaves Fastify the same body or the same error as the schema alone', () => {
    fc.assert(
      fc.property(bodyTextArb, (text) => {
        const parsed = evaluateBody.safeParse(JSON.parse(text));
        const answer = validated(JSON.parse(text));
        // toEqual: a fact named constructor makes two equal parses differ in toStrictEqual's eyes.
        if (parsed.success) expect(answer).toEqual({ body: parsed.data });
        else expect('error' in answer && answer.error.code).toBe('VALIDATION_ERROR');
      }),
      { numRuns: 2_000 },
    );
  });

  it('takes the fast path for the usual bodies', () => {
    fc.assert(
      fc.property(
        fc.dictionary(
          fc.string({ minLength: 1, maxLength: 8 }).filter((key) => key !== '__proto__' && key !== 'constructor'),
          fc.jsonValue({ maxDepth: 4 }),
        ),
        fc.option(fc.stringMatching(/^[a-z][a-z0-9-]{0,30}$/), { nil: undefined }),
        (facts, domain) => {
          const body = JSON.parse(JSON.stringify(domain === undefined ? { facts } : { facts, domain }));
          expect(isCommonEvaluateBody(body)).toBe(true);
        },
      ),
    );
  });

  it('leaves every rejection, and its wording, to the schema', () => {
    expect(validated({ facts: [] })).toMatchObject({
      error: { code: 'VALIDATION_ERROR', message: 'body.facts: Invalid input: expected record, received array' },
    });
    expect(validated({ facts: {}, domain: '' })).toMatchObject({ error: { message: 'body.domain: domain must not be empty' } });
    expect(validated({ facts: { deep: nested(MAX_FACT_DEPTH) } })).toMatchObject({
      error: { message: `body.facts: must not be nested deeper than ${MAX_FACT_DEPTH} levels` },
    });
    expect(validated({ facts: {}, extra: 1 })).toMatchObject({ error: { message: 'body: Unrecognized key: "extra"' } });
  });

  it('hands a domain with spaces around it to the schema, which trims it', () => {
    expect(isCommonDomain(' payments ')).toBe(false);
    expect(validated({ facts: {}, domain: ' payments ' })).toStrictEqual({ body: { facts: {}, domain: 'payments' } });
  });

  it('checks the fact nesting limit itself', () => {
    expect(isCommonFacts({ deep: nested(MAX_FACT_DEPTH - 1) })).toBe(true);
    expect(isCommonFacts({ deep: nested(MAX_FACT_DEPTH) })).toBe(false);
  });
});
