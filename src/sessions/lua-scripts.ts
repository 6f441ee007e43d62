// Lua sources read once at startup.
import { readFileSync } from 'node:fs';

function read(name: string): string {
  return readFileSync(new URL(`./lua/${name}`, import.meta.url), 'utf8');
}

export const LUA_SCRIPTS = {
  sessionCreate: read('create-session.lua'),
  sessionWrite: read('write-session.lua'),
  sessionRead: read('read-session.lua'),
} as const;

export type LuaScriptName = keyof typeof LUA_SCRIPTS;
