import kafkajs from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { lz4Codec, registerCompressionCodecs, snappyCodec, zstdCodec } from '../../../src/kafka/compression-codecs.ts';

const { CompressionCodecs, CompressionTypes } = kafkajs;

/**
 * The records of one batch of three facts as the Java client (kafka-clients 3.9.2) compressed them, keys k0..k2 and
 * values {"facts":{"amount":n},"domain":"payments"}: what a Java producer with compression.type set puts on the topic.
 */
const FROM_JAVA = {
  snappy:
    'glNOQVBQWQAAAAABAAAAAQAAAFObAehkAAAABGswVHsiZmFjdHMiOnsiYW1vdW50IjowfSwiZG9tYWluIjoicGF5bWVudHMifQBmAJgBAgRrMU40AAAxajQADAQEazJONAAAMlo0AA==',
  lz4: 'BCJNGGBAglYAAAD/K2QAAAAEazBUeyJmYWN0cyI6eyJhbW91bnQiOjB9LCJkb21haW4iOiJwYXltZW50cyJ9AGQAYgIEazEzAAEfMTMAB08EBGsyMwABHjIzAFB0cyJ9AAAAAAA=',
  zstd: 'KLUv/QBYdAIABARkAAAABGswVHsiZmFjdHMiOnsiYW1vdW50IjowfSwiZG9tYWluIjoicGF5bWVudHMifQBkAGICBGsxMQQEazIyBACgFoAmYF+1tIICAQAA',
};
const CODECS = { snappy: snappyCodec, lz4: lz4Codec, zstd: zstdCodec };

describe('compression codecs', () => {
  it.each(Object.keys(FROM_JAVA) as (keyof typeof FROM_JAVA)[])('reads %s records as the Java client compressed them', async (name) => {
    const records = (await CODECS[name].decompress(Buffer.from(FROM_JAVA[name], 'base64'))).toString('latin1');
    for (const n of [0, 1, 2]) expect(records).toContain(`k${n}T{"facts":{"amount":${n}},"domain":"payments"}`);
  });

  it.each(Object.keys(CODECS) as (keyof typeof CODECS)[])('gives back what %s compressed, large and empty', async (name) => {
    for (const buffer of [Buffer.from('{"facts":{"amount":42}}'.repeat(5_000)), Buffer.alloc(0)]) {
      expect((await CODECS[name].decompress(await CODECS[name].compress({ buffer }))).equals(buffer)).toBe(true);
    }
  });

  it('reads snappy as one raw block too (older librdkafka), and a stream of several blocks', async () => {
    const raw = Buffer.from(await snappyCodec.compress({ buffer: Buffer.from('abc') })).subarray(20);
    expect((await snappyCodec.decompress(raw)).toString()).toBe('abc');
    const [first, second] = await Promise.all(['one ', 'two'].map((text) => snappyCodec.compress({ buffer: Buffer.from(text) })));
    expect((await snappyCodec.decompress(Buffer.concat([first!, second!.subarray(16)]))).toString()).toBe('one two');
  });

  it('refuses a snappy stream cut short, naming where', async () => {
    const whole = await snappyCodec.compress({ buffer: Buffer.from('x'.repeat(100)) });
    await expect(snappyCodec.decompress(whole.subarray(0, 18))).rejects.toThrow('snappy stream cut short in a block length');
    await expect(snappyCodec.decompress(whole.subarray(0, whole.length - 1))).rejects.toThrow('snappy stream cut short in a block');
  });

  it('replaces the kafkajs codecs that threw "not implemented"', () => {
    expect(() => CompressionCodecs[CompressionTypes.LZ4]!()).toThrow('LZ4 compression not implemented');
    registerCompressionCodecs();
    expect(CompressionCodecs[CompressionTypes.Snappy]!()).toBe(snappyCodec);
    expect(CompressionCodecs[CompressionTypes.LZ4]!()).toBe(lz4Codec);
    expect(CompressionCodecs[CompressionTypes.ZSTD]!()).toBe(zstdCodec);
  });
});
