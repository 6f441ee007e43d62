import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { CONFIG_VARIABLES } from '../../../src/config.ts';

describe('docs/operations.md and the configuration schema', () => {
  it('has one table row per variable loadConfig reads, and none for a variable it does not', async () => {
    const text = await readFile(new URL('../../../docs/operations.md', import.meta.url), 'utf8');
    const documented = [...text.matchAll(/^\| `([A-Z][A-Z0-9_]+)` \|/gm)].map((match) => match[1]);
    expect([...documented].sort()).toEqual([...CONFIG_VARIABLES].sort());
  });
});
