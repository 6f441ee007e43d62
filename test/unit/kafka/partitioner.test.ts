import fc from 'fast-check';
import { Partitioners } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { fastDefaultPartitioner, murmur2 } from '../../../src/kafka/partitioner.ts';

const metadata = (count: number, leaderless: readonly number[] = []) =>
  Array.from({ length: count }, (_, partitionId) => ({
    partitionId,
    leader: leaderless.includes(partitionId) ? -1 : 0,
    partitionErrorCode: 0,
    replicas: [0],
    isr: [0],
  }));

describe('fastDefaultPartitioner', () => {
  it('picks the partition kafkajs DefaultPartitioner picks for every key and partition count', () => {
    const ours = fastDefaultPartitioner();
    const theirs = Partitioners.DefaultPartitioner();
    const key = fc.oneof(
      fc.uint8Array({ maxLength: 40 }).map((bytes) => Buffer.from(bytes)),
      fc.string({ maxLength: 20 }),
      fc.string({ unit: 'grapheme', maxLength: 10 }),
    );
    fc.assert(
      fc.property(key, fc.integer({ min: 1, max: 64 }), (messageKey, count) => {
        const args = { topic: 'results', partitionMetadata: metadata(count), message: { key: messageKey, value: 'v' } };
        expect(ours(args)).toBe(theirs(args));
      }),
      { numRuns: 5_000 },
    );
  });

  it('matches the Java client on known keys', () => {
    // Utils.murmur2 of these UTF-8 keys, from the Java client's own test.
    expect(murmur2(Buffer.from('21'))).toBe(-973932308);
    expect(murmur2(Buffer.from('foobar'))).toBe(-790332482);
    expect(murmur2(Buffer.from('a-little-bit-long-string'))).toBe(-985981536);
    expect(murmur2(Buffer.from('a-little-bit-longer-string'))).toBe(-1486304829);
    expect(murmur2(Buffer.from('lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8'))).toBe(-58897971);
  });

  it('keeps an explicit partition', () => {
    const partitioner = fastDefaultPartitioner();
    expect(partitioner({ topic: 't', partitionMetadata: metadata(3), message: { key: 'k', value: 'v', partition: 2 } })).toBe(2);
  });

  it('spreads keyless messages round-robin over the partitions that have a leader', () => {
    const partitioner = fastDefaultPartitioner();
    const partitionMetadata = metadata(4, [1]);
    const picked = Array.from({ length: 6 }, () => partitioner({ topic: 't', partitionMetadata, message: { key: null, value: 'v' } }));
    expect(new Set(picked)).toEqual(new Set([0, 2, 3]));
    for (let index = 3; index < picked.length; index++) expect(picked[index]).toBe(picked[index - 3]);
  });
});
