import { describe, expect, it } from 'vitest';
import { totalLag } from '../../../src/kafka/consumer-lag.ts';

describe('totalLag', () => {
  it('sums high watermark minus committed offset over partitions', () => {
    const ends = [
      { partition: 0, high: '100', low: '0' },
      { partition: 1, high: '50', low: '0' },
    ];
    expect(
      totalLag(ends, [
        { partition: 0, offset: '90' },
        { partition: 1, offset: '50' },
      ]),
    ).toBe(10);
  });

  it('counts a never-committed partition (-1 or absent) from its low watermark', () => {
    const ends = [
      { partition: 0, high: '30', low: '10' },
      { partition: 1, high: '5', low: '0' },
    ];
    expect(totalLag(ends, [{ partition: 0, offset: '-1' }])).toBe(25);
  });

  it('counts a partition committed below what retention kept from its low watermark', () => {
    expect(totalLag([{ partition: 0, high: '1000', low: '900' }], [{ partition: 0, offset: '100' }])).toBe(100);
  });

  it('is zero for an empty topic and never negative', () => {
    expect(totalLag([], [])).toBe(0);
    expect(totalLag([{ partition: 0, high: '3', low: '0' }], [{ partition: 0, offset: '7' }])).toBe(0);
  });

  it('handles offsets beyond 2^53', () => {
    expect(totalLag([{ partition: 0, high: '9007199254740999', low: '0' }], [{ partition: 0, offset: '9007199254740990' }])).toBe(9);
  });
});
