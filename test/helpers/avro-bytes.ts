// Avro's binary encoding, written by hand for tests: the bytes a producer (or a corrupted message) would send.

/** An Avro long (zigzag varint), as a value, a block count or a length is written. */
export function avroLong(value: number | bigint): Buffer {
  const big = BigInt(value);
  let zigzag = big >= 0n ? big * 2n : -big * 2n - 1n;
  const bytes: number[] = [];
  do {
    bytes.push(Number(zigzag & 0x7fn) | (zigzag > 0x7fn ? 0x80 : 0));
    zigzag >>= 7n;
  } while (zigzag > 0n);
  return Buffer.from(bytes);
}
