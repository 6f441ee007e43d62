// Turns an accumulator's running state into the value rules compare against; both stores use it so they agree.
import type { AccumulatorSpec } from './session-store.ts';

export interface RunningState {
  /** Contributions currently counted; read for count, sum and avg only (the Redis store reports 0 for min/max). */
  readonly count: number;
  readonly sum: number;
  /** Smallest or largest contribution for min/max accumulators; undefined when none. */
  readonly extreme: number | undefined;
}

export function aggregateValue(spec: AccumulatorSpec, state: RunningState): number | null {
  switch (spec.fn) {
    case 'count':
      return state.count;
    case 'sum':
      return state.count === 0 ? 0 : state.sum;
    case 'avg':
      return state.count === 0 ? null : state.sum / state.count;
    case 'min':
    case 'max':
      return state.extreme ?? null;
  }
}
