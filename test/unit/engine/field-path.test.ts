import { describe, expect, it } from 'vitest';
import { getPath } from '../../../src/engine/index.ts';

describe('getPath', () => {
  it('reads a top-level field', () => {
    expect(getPath({ amount: 5 }, 'amount')).toBe(5);
  });

  it('walks nested objects with dots', () => {
    expect(getPath({ user: { profile: { age: 30 } } }, 'user.profile.age')).toBe(30);
  });

  it('indexes arrays with numeric segments', () => {
    expect(getPath({ items: [{ sku: 'A' }, { sku: 'B' }] }, 'items.1.sku')).toBe('B');
  });

  it('finds a key that literally contains the whole dotted path, before walking', () => {
    expect(getPath({ 'user.profile.age': 30 }, 'user.profile.age')).toBe(30);
    expect(getPath({ 'user.age': 1, user: { age: 2 } }, 'user.age')).toBe(1);
  });

  it('treats a present null as a value and an absent key as missing', () => {
    expect(getPath({ a: null }, 'a')).toBeNull();
    expect(getPath({ a: 1 }, 'b')).toBeUndefined();
    expect(getPath({ a: { b: 1 } }, 'a.c')).toBeUndefined();
    expect(getPath({ a: 1 }, 'a.b')).toBeUndefined();
  });

  it('never reads through the prototype chain', () => {
    expect(getPath({}, '__proto__')).toBeUndefined();
    expect(getPath({}, 'constructor')).toBeUndefined();
    expect(getPath({}, 'toString')).toBeUndefined();
    expect(getPath({ a: {} }, 'a.constructor.name')).toBeUndefined();
    expect(getPath(JSON.parse('{"__proto__": 7}'), '__proto__')).toBe(7);
    expect(getPath({ toString: 'own' }, 'toString')).toBe('own');
  });

  it('reads only canonical indexes of arrays, never their properties', () => {
    const facts = { items: ['a', 'b'] };
    expect(getPath(facts, 'items.0')).toBe('a');
    expect(getPath(facts, 'items.01')).toBeUndefined();
    expect(getPath(facts, 'items.-1')).toBeUndefined();
    expect(getPath(facts, 'items.2')).toBeUndefined();
    expect(getPath(facts, 'items.length')).toBeUndefined();
    expect(getPath(facts, 'items.99999999999')).toBeUndefined();
  });

  it('finds nothing in facts that are not objects', () => {
    expect(getPath(null, 'a')).toBeUndefined();
    expect(getPath(5, 'a')).toBeUndefined();
    expect(getPath('text', 'length')).toBeUndefined();
    expect(getPath(undefined, 'a')).toBeUndefined();
  });

  it('indexes a top-level array with a numeric path', () => {
    expect(getPath(['x', { a: 1 }], '1.a')).toBe(1);
    expect(getPath(['x'], '0')).toBe('x');
    expect(getPath(['x'], 'length')).toBeUndefined();
  });
});
