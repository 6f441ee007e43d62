import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { compileProtobuf, decodeProtobuf } from '../../../src/kafka/registry-protobuf.ts';

/** Compiles a schema as the decoder does, and encodes its first message from an object as a producer would. */
const protobufSchema = (source: string) => {
  const root = new protobuf.Root();
  protobuf.parse(source, root, { keepCase: true });
  root.addJSON(protobuf.common.get('google/protobuf/wrappers.proto')!.nested!);
  const schema = compileProtobuf(source, []);
  const type = root.lookupType(schema.messages[0]!.fullName);
  // A single 0 before the message: the first message of the file.
  const decode = (message: object) => decodeProtobuf(schema, Buffer.from([0, ...type.encode(type.fromObject(message)).finish()]));
  return { decode };
};

describe('decodeProtobuf', () => {
  it('writes 64-bit map keys as their decimal text, as the proto3 JSON mapping does, where they came out as binary', () => {
    const { decode } = protobufSchema(`syntax = "proto3"; package k;
      message Keys {
        map<int64, string> signed = 1; map<uint64, string> unsigned = 2; map<sint64, string> zigzag = 3;
        map<fixed64, string> fixed = 4; map<sfixed64, string> sfixed = 5; map<int32, string> small = 6; map<bool, int32> flags = 7;
      }`);
    // Sent as these keys, they come back as the same text.
    const keys = {
      signed: { '5': 'five', '-7': 'minus seven', '9007199254740993': 'past 2^53' },
      unsigned: { '18446744073709551615': 'max' },
      zigzag: { '-3': 'minus three' },
      fixed: { '7': 'seven' },
      sfixed: { '-9223372036854775808': 'min' },
      small: { '-3': 'int32' },
      flags: { true: 1 },
    };
    expect(decode(keys)).toEqual(keys);
  });

  it('leaves out a proto3 field set to its default as if unset, so every encoder gives the same fact; keeps fields with presence', () => {
    const { decode } = protobufSchema(`syntax = "proto3"; package d; import "google/protobuf/wrappers.proto";
      enum Color { RED = 0; GREEN = 1; }
      message Fact {
        int32 zero = 1; string text = 2; bool flag = 3; bytes raw = 4; int64 big = 5; double d = 6; Color color = 7;
        repeated int32 list = 8; map<string, int32> by_name = 9; optional int32 opt = 10; oneof choice { int32 one = 11; string two = 12; }
        Inner inner = 13; google.protobuf.Int32Value wrapped = 14; repeated Inner inners = 15;
        message Inner { int32 a = 1; }
      }`);
    // protobufjs writes fields set to their default; other encoders leave them out: one message either way.
    const defaults = decode({ zero: 0, text: '', flag: false, raw: '', big: 0, d: 0, color: 'RED', list: [], by_name: {} });
    expect(defaults).toEqual({});
    expect(defaults).toEqual(decode({}));
    // `optional`, oneof members and messages have presence: set to their default, they are there.
    expect(decode({ opt: 0, one: 0, inner: {}, wrapped: { value: 0 }, inners: [{ a: 0 }] })).toEqual({
      opt: 0,
      one: 0,
      inner: {},
      wrapped: 0,
      inners: [{}],
    });
    expect(decode({ zero: 7, color: 'GREEN', list: [0], by_name: { k: 0 } })).toEqual({
      zero: 7,
      color: 'GREEN',
      list: [0],
      by_name: { k: 0 },
    });
    // proto2 fields have presence: a value set is kept, default or not.
    expect(protobufSchema('syntax = "proto2"; package p; message Old { optional int32 zero = 1; }').decode({ zero: 0 })).toEqual({
      zero: 0,
    });
  });

  it('writes floats as the shortest decimal of their 32 bits (1.1, not 1.100000023841858) wherever they are; doubles as they are', () => {
    const { decode } = protobufSchema(`syntax = "proto3"; package f; import "google/protobuf/wrappers.proto";
      message Measures {
        float f = 1; repeated float list = 2; map<string, float> by_name = 3; Inner inner = 4; repeated Inner inners = 5;
        oneof choice { float picked = 6; string other = 7; } google.protobuf.FloatValue wrapped = 8; double d = 9;
        message Inner { float x = 1; }
      }`);
    expect(
      decode({
        f: 1.1,
        list: [0.1, 2.5],
        by_name: { k: 3.3 },
        inner: { x: 0.7 },
        inners: [{ x: 0.2 }],
        picked: 1e-7,
        wrapped: { value: 1.1 },
        d: 1.1,
      }),
    ).toEqual({
      f: 1.1,
      list: [0.1, 2.5],
      by_name: { k: 3.3 },
      inner: { x: 0.7 },
      inners: [{ x: 0.2 }],
      picked: 1e-7,
      wrapped: 1.1,
      d: 1.1,
    });
  });
});
