// kafkajs's DefaultPartitioner (the Java client's keyed partitioning) with murmur2 in 32-bit integer arithmetic:
// kafkajs hashes every key through BigInt-backed 64-bit longs, which costs more than encoding the record.
import { randomBytes } from 'node:crypto';
import type { ICustomPartitioner, PartitionerArgs } from 'kafkajs';

const SEED = 0x9747b28c;
const M = 0x5bd1e995;

/** Kafka's murmur2 (org.apache.kafka.common.utils.Utils.murmur2) over the key bytes, as a signed 32-bit integer. */
export function murmur2(data: Uint8Array): number {
  const length = data.length;
  let h = (SEED ^ length) | 0;
  const whole = length & ~3;
  for (let i = 0; i < whole; i += 4) {
    let k = data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16) | (data[i + 3]! << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  // The Java switch falls through: 3 trailing bytes mix all three, then multiply once.
  const rest = length & 3;
  if (rest > 0) {
    if (rest === 3) h ^= data[whole + 2]! << 16;
    if (rest >= 2) h ^= data[whole + 1]! << 8;
    h ^= data[whole]!;
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h;
}

/**
 * Same choices as kafkajs's DefaultPartitioner: an explicit partition wins, a key picks murmur2(key) mod the partition
 * count, and a keyless message goes round-robin over the partitions that have a leader, from a random start per topic.
 */
export const fastDefaultPartitioner: ICustomPartitioner = () => {
  const counters = new Map<string, number>();
  return ({ topic, partitionMetadata, message }: PartitionerArgs): number => {
    if (message.partition !== null && message.partition !== undefined) return message.partition;
    const key = message.key;
    if (key !== null && key !== undefined) {
      const bytes = typeof key === 'string' ? Buffer.from(key) : key;
      return (murmur2(bytes) & 0x7fffffff) % partitionMetadata.length;
    }
    const counter = (counters.get(topic) ?? randomBytes(4).readUInt32BE(0)) + 1;
    counters.set(topic, counter);
    const available = partitionMetadata.filter((partition) => partition.leader >= 0);
    if (available.length > 0) return available[(counter & 0x7fffffff) % available.length]!.partitionId;
    return (counter & 0x7fffffff) % partitionMetadata.length;
  };
};
