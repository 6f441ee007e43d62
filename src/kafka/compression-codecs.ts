// Snappy, LZ4 and zstd record batches, as Java and librdkafka producers write them: kafkajs itself reads only gzip.
import { promisify } from 'node:util';
import { zstdCompress, zstdDecompress } from 'node:zlib';
import kafkajs from 'kafkajs';
import { compressFrame, decompressFrame } from 'lz4-napi';
import snappy from 'snappyjs';

// A CommonJS module whose codec table Node cannot see as a named export.
const { CompressionCodecs, CompressionTypes } = kafkajs;

/** What kafkajs asks of a codec: it hands `compress` its encoder, whose `buffer` holds the records. */
interface Codec {
  compress(encoder: { buffer: Buffer }): Promise<Buffer>;
  decompress(buffer: Buffer): Promise<Buffer>;
}

const zstdCompressAsync = promisify(zstdCompress);
const zstdDecompressAsync = promisify(zstdDecompress);

/** zstd frames (the Java client's zstd-jni stream), on Node's own zlib, off the event loop. */
export const zstdCodec: Codec = {
  compress: (encoder) => zstdCompressAsync(encoder.buffer),
  decompress: (buffer) => zstdDecompressAsync(buffer),
};

/** LZ4 frames (the Java client's KafkaLZ4BlockOutputStream for record batches), off the event loop. */
export const lz4Codec: Codec = {
  compress: (encoder) => compressFrame(encoder.buffer),
  decompress: (buffer) => decompressFrame(buffer),
};

/** The stream header snappy-java writes (magic, version 1, compatible version 1), which the Java client uses. */
const XERIAL_HEADER = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00, 0, 0, 0, 1, 0, 0, 0, 1]);
const XERIAL_MAGIC_LENGTH = 8;

/**
 * Snappy as the Java client writes it (snappy-java's stream: a header, then blocks each behind its big-endian length)
 * or as one raw block (librdkafka's older framing); written in the Java client's form.
 */
export const snappyCodec: Codec = {
  async compress(encoder) {
    const block = Buffer.from(snappy.compress(encoder.buffer));
    const length = Buffer.alloc(4);
    length.writeUInt32BE(block.length);
    return Buffer.concat([XERIAL_HEADER, length, block]);
  },
  async decompress(buffer) {
    if (!buffer.subarray(0, XERIAL_MAGIC_LENGTH).equals(XERIAL_HEADER.subarray(0, XERIAL_MAGIC_LENGTH))) {
      return Buffer.from(snappy.uncompress(buffer));
    }
    const blocks: Buffer[] = [];
    for (let offset = XERIAL_HEADER.length; offset < buffer.length; ) {
      if (offset + 4 > buffer.length) throw new Error('snappy stream cut short in a block length');
      const length = buffer.readUInt32BE(offset);
      offset += 4;
      if (offset + length > buffer.length) throw new Error('snappy stream cut short in a block');
      blocks.push(Buffer.from(snappy.uncompress(buffer.subarray(offset, offset + length))));
      offset += length;
    }
    return Buffer.concat(blocks);
  },
};

/** Lets every kafkajs client of this process read and write Snappy, LZ4 and zstd batches (kafkajs keeps codecs globally). */
export function registerCompressionCodecs(): void {
  CompressionCodecs[CompressionTypes.Snappy] = () => snappyCodec;
  CompressionCodecs[CompressionTypes.LZ4] = () => lz4Codec;
  CompressionCodecs[CompressionTypes.ZSTD] = () => zstdCodec;
}
