// The fired-set change a write reports (activated / deactivated), and the aggregates stored beside the fired set.
import type { Aggregates, FiredChange } from './session-store.ts';

export const NO_CHANGE: FiredChange = Object.freeze({ activated: [], deactivated: [] }) as FiredChange;

/** Rules in `fired` but not in `previous` are activated; rules in `previous` but not in `fired` are deactivated. */
export function firedChange(previous: readonly number[], fired: readonly number[]): FiredChange {
  // Most writes leave the fired set as it was (same rules, same order): no sets to build.
  if (sameIds(previous, fired)) return { activated: [], deactivated: [] };
  // One set: what is left of the previous ones once the fired ids are taken out, still in their order.
  const left = new Set(previous);
  const activated = fired.filter((rule) => !left.delete(rule));
  return { activated, deactivated: [...left] };
}

function sameIds(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i += 1) if (a[i] !== b[i]) return false;
  return true;
}

/** A sum past Number.MAX_VALUE is Infinity, which JSON cannot carry: it is stored as null rather than refusing the write. */
function storable(value: number | null | undefined): number | null {
  return value !== null && value !== undefined && Number.isFinite(value) ? value : null;
}

export function storableAggregates(values: Aggregates): Aggregates {
  const out: Aggregates = {};
  for (const id in values) out[id] = storable(values[id]);
  return out;
}

/** storableAggregates as JSON, built in one pass (accumulator ids need no escaping: letters, digits, `.`, `_`, `:`, `-`). */
export function aggregatesJson(values: Aggregates): string {
  let json = '';
  for (const id in values) json += `${json === '' ? '{' : ','}"${id}":${String(storable(values[id]))}`;
  return json === '' ? '{}' : `${json}}`;
}
