// A small seeded PRNG so every benchmark run sees the same rules and facts for a seed.

/** Uniform floats in [0, 1) from a 32-bit seed (mulberry32). */
export type Random = () => number;

export function mulberry32(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** An integer in [min, max], both inclusive. */
export function randomInt(random: Random, min: number, max: number): number {
  return min + Math.floor(random() * (max - min + 1));
}

/** One element of a non-empty list. */
export function pick<T>(random: Random, items: readonly T[]): T {
  const item = items[Math.floor(random() * items.length)];
  if (item === undefined) throw new Error('pick needs a non-empty list');
  return item;
}

/** `count` distinct elements of a list, in random order. */
export function pickDistinct<T>(random: Random, items: readonly T[], count: number): T[] {
  if (count > items.length) throw new Error(`cannot pick ${count} distinct items from ${items.length}`);
  const chosen = new Set<T>();
  while (chosen.size < count) chosen.add(pick(random, items));
  return [...chosen];
}

/** A number rounded to two decimals, so thresholds and amounts print like money. */
export function cents(value: number): number {
  return Math.round(value * 100) / 100;
}
