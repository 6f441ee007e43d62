import { describe, expect, it } from 'vitest';
import { legacySessionKeys, sessionKeys } from '../../../src/sessions/keys.ts';

// The slot Redis Cluster hashes: the text inside the first {...}.
function hashTag(key: string): string | undefined {
  return /\{([^}]+)\}/.exec(key)?.[1];
}

describe('session keys', () => {
  it('puts every key of a session under the prefix and the session id hash tag', () => {
    const legacy = legacySessionKeys('rules:', 's-1');
    const keys = [...Object.values(sessionKeys('rules:', 's-1')), legacy.totals, legacy.accumulators, ...legacy.perAccumulator('a.b')];
    expect(new Set(keys).size).toBe(keys.length);
    for (const key of keys) {
      expect(key.startsWith('rules:session:{s-1}:')).toBe(true);
      expect(hashTag(key)).toBe('s-1');
    }
  });

  it('names each key for its job', () => {
    expect(sessionKeys('p:', 'x')).toEqual({
      meta: 'p:session:{x}:meta',
      facts: 'p:session:{x}:facts',
      contributions: 'p:session:{x}:contrib',
      changes: 'p:session:{x}:changes',
      log: 'p:session:{x}:log',
      letGo: 'p:session:{x}:letgo',
      letGoPrints: 'p:session:{x}:letgoprints',
    });
    const legacy = legacySessionKeys('p:', 'x');
    expect([legacy.totals, legacy.accumulators]).toEqual(['p:session:{x}:totals', 'p:session:{x}:accs']);
    expect(legacy.perAccumulator('acc')).toEqual(['p:session:{x}:acc:acc:time', 'p:session:{x}:acc:acc:value']);
  });

  it('keeps two sessions apart', () => {
    expect(sessionKeys('', 'a').facts).not.toBe(sessionKeys('', 'b').facts);
  });
});
