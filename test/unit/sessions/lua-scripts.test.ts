import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { LUA_SCRIPTS } from '../../../src/sessions/lua-scripts.ts';

const dir = new URL('../../../src/sessions/lua/', import.meta.url);

describe('session Lua scripts', () => {
  it('gives every script file a header stating KEYS, ARGV and output', () => {
    const files = readdirSync(dir).filter((f) => f.endsWith('.lua'));
    expect(files.sort()).toEqual(['create-session.lua', 'read-session.lua', 'write-session.lua']);
    for (const file of files) {
      const header = readFileSync(new URL(file, dir), 'utf8').split(']]')[0] ?? '';
      expect(header.startsWith(`--[[\n  ${file.replace('.lua', '')}:`), file).toBe(true);
      for (const part of ['KEYS:', 'ARGV:', 'Output:']) expect(header, `${file} ${part}`).toContain(part);
    }
  });

  it('loads each script file as one command', () => {
    expect(Object.keys(LUA_SCRIPTS).sort()).toEqual(['sessionCreate', 'sessionRead', 'sessionWrite']);
    expect(LUA_SCRIPTS.sessionWrite).toContain("return { 'STALE' }");
    expect(LUA_SCRIPTS.sessionCreate).toContain("'stamp', ARGV[5]");
  });
});
