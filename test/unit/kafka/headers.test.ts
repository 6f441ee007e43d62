import type { IHeaders } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { carriedHeaders, deadLetterHeaders, headerText, MAX_DETAIL_LENGTH, resultHeaders } from '../../../src/kafka/headers.ts';

describe('headerText', () => {
  it('reads Buffer and string values, the first of repeated values, and nothing for undefined', () => {
    expect(headerText(Buffer.from('abc'))).toBe('abc');
    expect(headerText('abc')).toBe('abc');
    expect(headerText([Buffer.from('one'), 'two'])).toBe('one');
    expect(headerText(undefined)).toBeUndefined();
    expect(headerText([])).toBeUndefined();
  });
});

describe('carriedHeaders', () => {
  it('carries trace, correlation and custom headers as they are', () => {
    const traceparent = Buffer.from('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
    const headers = carriedHeaders({ traceparent, 'correlation-id': 'c-1', 'x-tenant': 'acme' });
    expect(headers).toEqual({ traceparent, 'correlation-id': 'c-1', 'x-tenant': 'acme' });
  });

  it('drops the input encoding headers and names reserved for dead letters, in any case', () => {
    expect(carriedHeaders({ 'Content-Type': 'application/avro', error_code: 'X', SOURCE_OFFSET: '1', keep: 'yes' })).toEqual({
      keep: 'yes',
    });
  });

  it('carries nothing when the input has no headers', () => {
    expect(carriedHeaders(undefined)).toEqual({});
  });
});

describe('resultHeaders', () => {
  it('adds the result content type', () => {
    expect(resultHeaders({ 'correlation-id': 'c-9', 'content-type': 'avro/binary' })).toEqual({
      'correlation-id': 'c-9',
      'content-type': Buffer.from('application/json'),
    });
  });
});

describe('deadLetterHeaders', () => {
  const reason = { code: 'VALIDATION_ERROR', detail: 'value is not valid JSON', topic: 'rules.facts', partition: 2, offset: '41' };

  it('keeps every original header and adds the reason and the source position as text', () => {
    expect(deadLetterHeaders({ 'content-type': 'application/json', traceparent: 'tp' }, reason)).toEqual({
      'content-type': 'application/json',
      traceparent: 'tp',
      error_code: 'VALIDATION_ERROR',
      error_detail: 'value is not valid JSON',
      source_topic: 'rules.facts',
      source_partition: '2',
      source_offset: '41',
    });
  });

  it('never lets an original header impersonate a reason header', () => {
    const headers = deadLetterHeaders({ ERROR_CODE: 'forged', source_offset: '0' }, reason);
    expect(headers.ERROR_CODE).toBeUndefined();
    expect(headers.source_offset).toBe('41');
  });

  it('cuts an overlong detail', () => {
    const headers = deadLetterHeaders(undefined, { ...reason, detail: 'x'.repeat(MAX_DETAIL_LENGTH + 50) });
    expect(headerText(headers.error_detail)).toHaveLength(MAX_DETAIL_LENGTH);
  });

  it('cleans the values kafkajs decodes for headers named like Object.prototype members, and keeps a __proto__ header', () => {
    // What kafkajs 2 hands over for headers toString: a, constructor: b and __proto__: c.
    const decoded: IHeaders = {};
    Reflect.set(decoded, 'toString', [Object.prototype.toString, Buffer.from('a')]);
    Reflect.set(decoded, 'constructor', [Object, Buffer.from('b')]);
    // Its assignment to __proto__ sets the prototype, as this does.
    Object.setPrototypeOf(decoded, [Object.prototype, Buffer.from('c')]);
    const carried = carriedHeaders(decoded);
    expect(Object.keys(carried).sort()).toEqual(['__proto__', 'constructor', 'toString']);
    expect(Object.getOwnPropertyDescriptor(carried, '__proto__')?.value).toEqual(Buffer.from('c'));
    expect(Reflect.get(carried, 'toString')).toEqual(Buffer.from('a'));
    expect(Reflect.get(carried, 'constructor')).toEqual(Buffer.from('b'));
    const dead = deadLetterHeaders(decoded, { code: 'VALIDATION_ERROR', detail: 'x', topic: 't', partition: 0, offset: '1' });
    expect(Object.keys(dead)).toEqual(expect.arrayContaining(['__proto__', 'constructor', 'toString']));
    expect(headerText(Reflect.get(decoded, 'toString'))).toBe('a');
  });
});
