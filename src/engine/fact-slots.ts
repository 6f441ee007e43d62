// Field values of the fact being evaluated, each path resolved at most once per fact and shared by every index and rule.
import type { FieldGetter } from './field-path.ts';

const MAX_GENERATION = 0xffff_fffe;
const EMPTY: object = Object.freeze({});

export class FactSlots {
  readonly #slots = new Map<string, number>();
  readonly #getters: FieldGetter[] = [];
  readonly #makeGetter: (field: string) => FieldGetter;
  #stamps = new Uint32Array(0);
  #values: unknown[] = [];
  #generation = 0;
  #facts: object = EMPTY;

  constructor(makeGetter: (field: string) => FieldGetter) {
    this.#makeGetter = makeGetter;
  }

  /** The slot of a field path, allocated on first use (compile time only). */
  slotOf(field: string): number {
    let slot = this.#slots.get(field);
    if (slot === undefined) {
      slot = this.#getters.length;
      this.#slots.set(field, slot);
      this.#getters.push(this.#makeGetter(field));
    }
    return slot;
  }

  /** Sizes the per-fact cache once every slot is known. */
  seal(): void {
    this.#stamps = new Uint32Array(this.#getters.length);
    this.#values = new Array<unknown>(this.#getters.length).fill(undefined);
  }

  /** Starts a new fact: every cached value becomes stale without touching the cache. */
  begin(facts: object): void {
    if (this.#generation >= MAX_GENERATION) {
      this.#generation = 0;
      this.#stamps.fill(0);
    }
    this.#generation += 1;
    this.#facts = facts;
  }

  /** Drops the reference to the fact, so a finished evaluation keeps nothing alive. */
  end(): void {
    this.#facts = EMPTY;
  }

  /** The value at the slot's path in the current fact; undefined when missing. */
  value(slot: number): unknown {
    if (this.#stamps[slot] === this.#generation) return this.#values[slot];
    const value = this.#getters[slot]!(this.#facts);
    this.#stamps[slot] = this.#generation;
    this.#values[slot] = value;
    return value;
  }
}
