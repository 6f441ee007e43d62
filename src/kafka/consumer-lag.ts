// Consumer lag: how many input messages the group has not committed yet, summed over the facts topic's partitions.
import type { Admin } from 'kafkajs';

export interface PartitionEnds {
  partition: number;
  high: string;
  low: string;
}

export interface CommittedOffset {
  partition: number;
  offset: string;
}

/**
 * Sum over partitions of high watermark minus committed offset; a partition never committed, or committed below what
 * retention kept, counts from its low watermark (nothing older is left to consume).
 */
export function totalLag(ends: readonly PartitionEnds[], committed: readonly CommittedOffset[]): number {
  const byPartition = new Map(committed.map((entry) => [entry.partition, BigInt(entry.offset)]));
  let lag = 0n;
  for (const end of ends) {
    const high = BigInt(end.high);
    const commit = byPartition.get(end.partition);
    const low = BigInt(end.low);
    const from = commit === undefined || commit < low ? low : commit;
    if (high > from) lag += high - from;
  }
  return Number(lag);
}

/** Reads the group's lag from the broker; used by metrics and tests. */
export async function readLag(admin: Admin, groupId: string, topic: string): Promise<number> {
  const [ends, offsets] = await Promise.all([admin.fetchTopicOffsets(topic), admin.fetchOffsets({ groupId, topics: [topic] })]);
  const committed = offsets.find((entry) => entry.topic === topic)?.partitions ?? [];
  return totalLag(ends, committed);
}
