import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AppError } from '../../../src/errors.ts';
import { describeIssues, zodValidatorCompiler } from '../../../src/http/zod-compilers.ts';

const schema = z.strictObject({ facts: z.record(z.string(), z.unknown()), items: z.array(z.number()).optional() });

function validate(data: unknown, httpPart = 'body') {
  const validator = zodValidatorCompiler({ schema, method: 'POST', url: '/x', httpPart });
  return validator(data) as { value?: unknown; error?: AppError };
}

describe('zodValidatorCompiler', () => {
  it('hands the parsed value to Fastify', () => {
    expect(validate({ facts: { a: 1 } })).toEqual({ value: { facts: { a: 1 } } });
  });

  it('answers VALIDATION_ERROR naming each problem with its path', () => {
    const { error } = validate({ facts: [], items: [1, 'two'], extra: true });
    expect(error).toBeInstanceOf(AppError);
    expect(error!.code).toBe('VALIDATION_ERROR');
    expect(error!.message).toContain('body.facts: ');
    expect(error!.message).toContain('body.items[1]: ');
    expect(error!.message).toContain('body: Unrecognized key: "extra"');
  });

  it('names the part of the request', () => {
    expect(validate('x', 'querystring').error!.message).toMatch(/^query: /);
    expect(validate('x', 'params').error!.message).toMatch(/^path: /);
  });
});

describe('describeIssues', () => {
  it('lists at most ten problems, then how many more', () => {
    const many = z.array(z.string()).safeParse(Array.from({ length: 12 }, (_, index) => index));
    const text = describeIssues(many.error!.issues, 'body');
    expect(text.split('; ')).toHaveLength(11);
    expect(text.endsWith('and 2 more')).toBe(true);
  });
});
