import { describe, expect, it } from 'vitest';
import { TimeQueue } from '../../../src/sessions/time-queue.ts';

interface Item {
  readonly id: number;
  readonly at: number;
}

describe('TimeQueue', () => {
  it('always hands back the oldest item it holds, however late some arrive', () => {
    let seed = 11;
    const next = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed;
    };
    // Mostly in order, one in five late by up to 50, many equal times.
    const items: Item[] = Array.from({ length: 3_000 }, (_, id) => ({ id, at: id - (next() % 5 === 0 ? next() % 50 : 0) }));
    const queue = new TimeQueue<Item>((item) => item.at, items.slice(0, 100));
    const held = new Set(items.slice(0, 100));
    const popped: Item[] = [];
    const pop = () => {
      const item = queue.pop();
      if (item === undefined) return false;
      // Nothing still held is older.
      expect(Math.min(...[...held].map((h) => h.at))).toBe(item.at);
      held.delete(item);
      popped.push(item);
      return true;
    };
    items.slice(100).forEach((item, i) => {
      queue.push(item);
      held.add(item);
      // Drain some on the way, so the front is given back while items keep arriving.
      if (i % 3 === 0 && queue.size > 200) pop();
    });
    expect(queue.size).toBe(held.size);
    while (pop()) {}
    expect(queue.size).toBe(0);
    expect(queue.peek()).toBeUndefined();
    expect(popped.map((item) => item.id).sort((a, b) => a - b)).toEqual(items.map((item) => item.id));
  });

  it('sorts the items it is built from and inserts a late item after equal times', () => {
    const queue = new TimeQueue<Item>(
      (item) => item.at,
      [
        { id: 1, at: 5 },
        { id: 2, at: 1 },
        { id: 3, at: 5 },
      ],
    );
    queue.push({ id: 4, at: 5 });
    queue.push({ id: 5, at: 2 });
    expect(queue.peek()).toEqual({ id: 2, at: 1 });
    const ids: number[] = [];
    for (let item = queue.pop(); item !== undefined; item = queue.pop()) ids.push(item.id);
    expect(ids).toEqual([2, 5, 1, 3, 4]);
    expect(queue.pop()).toBeUndefined();
    expect(queue.values()).toEqual([]);
    queue.push({ id: 6, at: 9 });
    queue.push({ id: 7, at: 8 });
    expect(queue.values().map((item) => item.id)).toEqual([7, 6]);
  });
});
