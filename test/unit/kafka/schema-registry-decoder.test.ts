import { once } from 'node:events';
import { type AddressInfo, createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { isRetryable } from '../../../src/errors.ts';
import { classifyRegistryError, connectSchemaRegistry, createRegistryDecoder } from '../../../src/kafka/schema-registry-decoder.ts';

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

describe('connectSchemaRegistry', () => {
  it('gives up on a registry that accepts connections but never answers, as unavailable (retried), not hanging', async () => {
    const silent = createServer(() => undefined);
    silent.listen(0, '127.0.0.1');
    await once(silent, 'listening');
    const { port } = silent.address() as AddressInfo;
    try {
      const decoder = createRegistryDecoder(connectSchemaRegistry(`http://127.0.0.1:${port}`, 200));
      const started = Date.now();
      const error = await decoder.decode(Buffer.from([0, 0, 0, 0, 7, 2, 4])).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'UNAVAILABLE' });
      expect(isRetryable(error)).toBe(true);
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      silent.close();
    }
  });
});
