import { describe, expect, it } from 'vitest';
import { WriteFrequency } from '../../../src/sessions/write-frequency.ts';

describe('WriteFrequency', () => {
  it('counts writes per session', () => {
    const frequency = new WriteFrequency();
    for (let i = 0; i < 3; i += 1) frequency.count('a');
    frequency.count('b');
    expect([frequency.of('a'), frequency.of('b'), frequency.of('c')]).toEqual([3, 1, 0]);
  });

  it('halves every count each period writes and forgets those that reach zero', () => {
    const frequency = new WriteFrequency(10);
    for (let i = 0; i < 7; i += 1) frequency.count('a');
    frequency.count('b');
    frequency.count('c');
    expect(frequency.size).toBe(3);
    // The tenth write: a 8 → 4, b 1 → forgotten, c 1 → forgotten.
    frequency.count('a');
    expect([frequency.of('a'), frequency.of('b'), frequency.of('c'), frequency.size]).toEqual([4, 0, 0, 1]);
    for (let i = 0; i < 10; i += 1) frequency.count('b');
    expect([frequency.of('a'), frequency.of('b')]).toEqual([2, 5]);
  });

  it('stays within twice the period however many sessions are written', () => {
    const frequency = new WriteFrequency(100);
    let largest = 0;
    for (let i = 0; i < 10_000; i += 1) {
      frequency.count(i % 3 === 0 ? 'hot' : `cold-${i}`);
      largest = Math.max(largest, frequency.size);
    }
    expect(largest).toBeLessThanOrEqual(200);
    expect(frequency.of('hot')).toBeGreaterThan(0);
  });

  it('forgets a session at once', () => {
    const frequency = new WriteFrequency();
    frequency.count('a');
    frequency.forget('a');
    expect([frequency.of('a'), frequency.size]).toEqual([0, 0]);
  });
});
