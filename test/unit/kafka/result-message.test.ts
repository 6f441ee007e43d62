import { describe, expect, it } from 'vitest';
import { resultMessageSchema } from '../../../src/contracts/kafka-messages.ts';
import { buildResult, deadLetterRecord, resultRecord } from '../../../src/kafka/result-message.ts';

const evaluation = {
  execution_id: 'e-1',
  fired_rules: [3, 1],
  actions: ['flag', 'notify'],
  latency_ms: 0.12,
  domain: 'payments',
  revision: 7,
};
const source = { topic: 'rules.facts', partition: 1, offset: '99' };

describe('buildResult', () => {
  it('names the execution, the rules, the actions, the revision and the input position', () => {
    const result = buildResult(evaluation, source);
    expect(result).toEqual({ ...evaluation, source });
    expect(resultMessageSchema.parse(result)).toEqual(result);
  });
});

describe('resultRecord', () => {
  it('keeps the input key, writes the result as JSON and carries the trace headers', () => {
    const key = Buffer.from('customer-7');
    const record = resultRecord(
      { key, value: Buffer.from('{}'), offset: '99', headers: { traceparent: 'tp', 'correlation-id': 'c' } },
      evaluation,
      source,
    );
    expect(record.key).toBe(key);
    expect(JSON.parse(String(record.value))).toEqual({ ...evaluation, source });
    expect(record.headers).toEqual({ traceparent: 'tp', 'correlation-id': 'c', 'content-type': Buffer.from('application/json') });
  });

  it('keeps a null key null', () => {
    expect(resultRecord({ key: null, value: null, offset: '0' }, evaluation, source).key).toBeNull();
  });
});

describe('deadLetterRecord', () => {
  it('keeps the original key and value bytes untouched and explains why in headers', () => {
    const key = Buffer.from([0xff, 0x00, 0x10]);
    const value = Buffer.from([0x7b, 0x22, 0xc3]);
    const record = deadLetterRecord({ key, value, offset: '99', headers: { 'x-origin': 'app' } }, source, {
      code: 'VALIDATION_ERROR',
      detail: 'value is not valid JSON',
    });
    expect(record.key).toBe(key);
    expect(record.value).toBe(value);
    expect(record.headers).toEqual({
      'x-origin': 'app',
      error_code: 'VALIDATION_ERROR',
      error_detail: 'value is not valid JSON',
      source_topic: 'rules.facts',
      source_partition: '1',
      source_offset: '99',
    });
  });
});
