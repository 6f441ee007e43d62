// Lua sources read once at startup; add-fact and retract-fact share accumulators.lua, prepended here.
import { readFileSync } from 'node:fs';

function read(name: string): string {
  return readFileSync(new URL(`./lua/${name}`, import.meta.url), 'utf8');
}

const shared = read('accumulators.lua');

export const LUA_SCRIPTS = {
  sessionCreate: read('create-session.lua'),
  sessionAddFact: `${shared}\n${read('add-fact.lua')}`,
  sessionRetractFact: `${shared}\n${read('retract-fact.lua')}`,
  sessionSetFired: read('set-fired.lua'),
} as const;

export type LuaScriptName = keyof typeof LUA_SCRIPTS;
