import { describe, expect, it } from 'vitest';
import { ApiKeyVerifier, allows, presentedKey } from '../../../src/http/auth.ts';

describe('ApiKeyVerifier', () => {
  const verifier = new ApiKeyVerifier([
    { name: 'ops', key: 'admin-key', scope: 'admin' },
    { name: 'ci', key: 'evaluate-key', scope: 'evaluate' },
  ]);

  it('names the owner of a known key', () => {
    expect(verifier.identify('admin-key')).toEqual({ name: 'ops', scope: 'admin' });
    expect(verifier.identify('evaluate-key')).toEqual({ name: 'ci', scope: 'evaluate' });
  });

  it('knows nothing of other keys, prefixes or case variants', () => {
    for (const key of ['', 'admin', 'admin-key ', 'ADMIN-KEY', 'admin-keyx']) expect(verifier.identify(key)).toBeUndefined();
  });
});

describe('presentedKey', () => {
  const headers = (h: Record<string, string>) => ({ headers: h });

  it('reads Authorization: Bearer, any case of the scheme', () => {
    expect(presentedKey(headers({ authorization: 'Bearer k1' }))).toBe('k1');
    expect(presentedKey(headers({ authorization: 'bearer   k1 ' }))).toBe('k1');
  });

  it('falls back to X-API-Key', () => {
    expect(presentedKey(headers({ 'x-api-key': ' k2 ' }))).toBe('k2');
    expect(presentedKey(headers({ authorization: 'Basic dXNlcjpwYXNz', 'x-api-key': 'k2' }))).toBe('k2');
  });

  it('finds nothing in other schemes or empty headers', () => {
    expect(presentedKey(headers({ authorization: 'Basic dXNlcjpwYXNz' }))).toBeUndefined();
    expect(presentedKey(headers({ authorization: 'Bearer' }))).toBeUndefined();
    expect(presentedKey(headers({ 'x-api-key': '  ' }))).toBeUndefined();
    expect(presentedKey(headers({}))).toBeUndefined();
  });
});

describe('allows', () => {
  const admin = { name: 'a', scope: 'admin' } as const;
  const evaluate = { name: 'e', scope: 'evaluate' } as const;

  it('lets admin do everything and evaluate only evaluate', () => {
    expect(allows(admin, 'admin')).toBe(true);
    expect(allows(admin, 'evaluate')).toBe(true);
    expect(allows(evaluate, 'evaluate')).toBe(true);
    expect(allows(evaluate, 'admin')).toBe(false);
    expect(allows(evaluate, 'public')).toBe(true);
  });
});
