import { describe, expect, it } from 'vitest';
import { MinHeap } from '../../../src/sessions/min-heap.ts';

describe('MinHeap', () => {
  it('hands items back in comparator order, however they went in', () => {
    let seed = 7;
    const values = Array.from({ length: 500 }, () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % 100;
    });
    const heap = new MinHeap<number>((a, b) => a < b, values.slice(0, 250));
    for (const value of values.slice(250)) heap.push(value);
    expect(heap.size).toBe(500);
    const out: number[] = [];
    for (let item = heap.pop(); item !== undefined; item = heap.pop()) out.push(item);
    expect(out).toEqual([...values].sort((a, b) => a - b));
    expect(heap.peek()).toBeUndefined();
  });

  it('orders by any comparator, e.g. largest first', () => {
    const heap = new MinHeap<number>((a, b) => a > b, [3, 9, 1]);
    expect(heap.peek()).toBe(9);
    expect([heap.pop(), heap.pop(), heap.pop(), heap.pop()]).toEqual([9, 3, 1, undefined]);
  });
});

describe('MinHeap values', () => {
  it('lists every item held, and the heap still hands them out in order afterwards', () => {
    const heap = new MinHeap<number>((a, b) => a < b, [5, 2, 8, 1]);
    expect(heap.values().sort((a, b) => a - b)).toEqual([1, 2, 5, 8]);
    heap.pop();
    expect(heap.values().sort((a, b) => a - b)).toEqual([2, 5, 8]);
    expect([heap.pop(), heap.pop(), heap.pop()]).toEqual([2, 5, 8]);
  });
});
