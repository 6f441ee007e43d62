// The aggregate values a session read shows and explains: those its latest write evaluated, else the empty value.
import type { Accumulator, AggregateValues } from '../engine/index.ts';
import { aggregateValue } from '../sessions/aggregate-value.ts';

const EMPTY = { count: 0, sum: 0, extreme: undefined };

/**
 * The value of one accumulator as of the latest write. No stored value: the node is new or changed since that write
 * (or its rule was disabled then), and nothing has contributed to it yet: 0 for count and sum, null otherwise.
 */
export function valueAsOfWrite(accumulator: Pick<Accumulator, 'id' | 'fn'>, stored: AggregateValues): number | null {
  return Object.hasOwn(stored, accumulator.id) ? (stored[accumulator.id] ?? null) : aggregateValue(accumulator, EMPTY);
}

/** Every given accumulator's value as of the latest write, by id: a complete map, so none falls back to single-fact semantics. */
export function valuesAsOfWrite(accumulators: readonly Pick<Accumulator, 'id' | 'fn'>[], stored: AggregateValues): AggregateValues {
  return Object.fromEntries(accumulators.map((accumulator) => [accumulator.id, valueAsOfWrite(accumulator, stored)]));
}
