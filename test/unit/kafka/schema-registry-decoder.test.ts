import { describe, expect, it } from 'vitest';
import { isRetryable } from '../../../src/errors.ts';
import { classifyRegistryError } from '../../../src/kafka/schema-registry-decoder.ts';

const httpError = (status: number, message: string) => Object.assign(new Error(message), { status });

describe('classifyRegistryError', () => {
  it('treats an unknown schema id (404) as an input that can never be decoded', () => {
    const error = classifyRegistryError(42, httpError(404, 'Schema not found'));
    expect(error.code).toBe('VALIDATION_ERROR');
    expect(error.message).toBe('schema id 42 is not in the schema registry');
    expect(isRetryable(error)).toBe(false);
  });

  it('treats other HTTP failures, including connection errors the client reports as 400, as the registry being unavailable', () => {
    for (const status of [400, 401, 500, 503]) {
      const error = classifyRegistryError(7, httpError(status, 'Error, status 400: connect ECONNREFUSED'));
      expect(error.code).toBe('UNAVAILABLE');
      expect(isRetryable(error)).toBe(true);
    }
  });

  it('treats a schema the client cannot use as undecodable', () => {
    const error = classifyRegistryError(3, new Error('Unsupported schema type'));
    expect(error.code).toBe('VALIDATION_ERROR');
    expect(error.message).toBe('schema id 3 cannot be used to decode: Unsupported schema type');
  });
});
