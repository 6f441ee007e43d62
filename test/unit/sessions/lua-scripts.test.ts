import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { LUA_SCRIPTS } from '../../../src/sessions/lua-scripts.ts';

const dir = new URL('../../../src/sessions/lua/', import.meta.url);

describe('session Lua scripts', () => {
  it('gives every script file a header stating KEYS, ARGV and output', () => {
    const files = readdirSync(dir).filter((f) => f.endsWith('.lua') && f !== 'accumulators.lua');
    expect(files.sort()).toEqual(['add-fact.lua', 'create-session.lua', 'retract-fact.lua', 'set-fired.lua']);
    for (const file of files) {
      const header = readFileSync(new URL(file, dir), 'utf8').split(']]')[0] ?? '';
      expect(header.startsWith(`--[[\n  ${file.replace('.lua', '')}:`), file).toBe(true);
      for (const part of ['KEYS:', 'ARGV:', 'Output:']) expect(header, `${file} ${part}`).toContain(part);
    }
  });

  it('prepends the shared accumulator functions to the scripts that use them', () => {
    expect(LUA_SCRIPTS.sessionAddFact).toContain('local function evict(');
    expect(LUA_SCRIPTS.sessionRetractFact).toContain('local function evict(');
    expect(LUA_SCRIPTS.sessionCreate).not.toContain('local function evict(');
  });
});
