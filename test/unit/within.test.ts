import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { within } from '../../src/within.ts';

describe('within', () => {
  it('gives the value of a promise that settles in time, and undefined for one that does not', async () => {
    expect(await within(Promise.resolve(7), 50)).toEqual({ value: 7 });
    expect(await within(sleep(200, 'late'), 20)).toBeUndefined();
  });

  it('throws a rejection that comes in time and ignores one that comes late', async () => {
    await expect(within(Promise.reject(new Error('refused')), 50)).rejects.toThrow('refused');
    const late = sleep(40).then(() => {
      throw new Error('too late to matter');
    });
    expect(await within(late, 10)).toBeUndefined();
    // An unhandled rejection would fail the run.
    await sleep(60);
  });
});
