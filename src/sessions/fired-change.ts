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

/**
 * A sum past Number.MAX_VALUE is Infinity: kept as such, so explain compares what the write compared (only NaN, which
 * no aggregate should be, is stored as null).
 */
function storable(value: number | null | undefined): number | null {
  return value === null || value === undefined || Number.isNaN(value) ? null : value;
}

export function storableAggregates(values: Aggregates): Aggregates {
  const out: Aggregates = {};
  for (const id in values) out[id] = storable(values[id]);
  return out;
}

/**
 * storableAggregates as JSON, built in one pass (accumulator ids need no escaping: letters, digits, `.`, `_`, `:`, `-`);
 * JSON has no infinity, so ±Infinity is written as the string "Infinity" or "-Infinity" (storedAggregate reads it back).
 */
export function aggregatesJson(values: Aggregates): string {
  let json = '';
  for (const id in values) {
    const value = storable(values[id]);
    const text = value === null || Number.isFinite(value) ? String(value) : `"${String(value)}"`;
    json += `${json === '' ? '{' : ','}"${id}":${text}`;
  }
  return json === '' ? '{}' : `${json}}`;
}

/** One value of aggregatesJson read back: a number, ±Infinity from its string, else null. */
export function storedAggregate(value: unknown): number | null {
  if (typeof value === 'number') return value;
  if (value === 'Infinity') return Number.POSITIVE_INFINITY;
  if (value === '-Infinity') return Number.NEGATIVE_INFINITY;
  return null;
}
