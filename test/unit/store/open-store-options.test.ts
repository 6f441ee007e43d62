import { describe, expect, it } from 'vitest';
import { openStore } from '../../../src/store/open-store.ts';

describe('openStore options', () => {
  it('refuses sizes and intervals that are not positive integers before opening anything', async () => {
    const bad = [
      { executionBatchSize: 0 },
      { executionFlushMs: -5 },
      { executionFlushMs: 1.5 },
      { executionBacklogWarning: Number.NaN },
      { poolSize: 0 },
    ];
    for (const option of bad) {
      const [name, value] = Object.entries(option)[0] ?? [];
      await expect(openStore({ dataDir: 'memory://', ...option })).rejects.toThrow(`${name} must be a positive integer, got ${value}`);
    }
  });
});
