import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../../src/store/canonical-json.ts';

describe('canonicalJson', () => {
  it('sorts object keys at every depth, keeping array order', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
  });

  it('gives the same text whatever order the keys were inserted in', () => {
    expect(canonicalJson({ x: 1, y: 2 })).toBe(canonicalJson({ y: 2, x: 1 }));
  });

  it('drops undefined members and writes undefined array items and top-level undefined as null, like JSON.stringify', () => {
    expect(canonicalJson({ a: undefined, b: [undefined, 1] })).toBe('{"b":[null,1]}');
    expect(canonicalJson(undefined)).toBe('null');
  });

  it('honours toJSON and escapes strings as JSON does', () => {
    expect(canonicalJson({ at: new Date('2024-01-02T03:04:05.678Z') })).toBe('{"at":"2024-01-02T03:04:05.678Z"}');
    expect(canonicalJson({ 'quote"key': 'line\nbreak' })).toBe('{"quote\\"key":"line\\nbreak"}');
  });

  it('orders keys by UTF-16 code units, not locale', () => {
    expect(canonicalJson({ b: 1, B: 2, ä: 3, a: 4 })).toBe('{"B":2,"a":4,"b":1,"ä":3}');
  });
});
