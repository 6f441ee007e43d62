import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { renderSchema, SCHEMAS } from '../../../scripts/generate-schemas.ts';
import { deadLetterHeaders, headerText } from '../../../src/kafka/headers.ts';
import { buildResult, buildSessionResult } from '../../../src/kafka/result-message.ts';

function validator(file: string) {
  const entry = SCHEMAS.find((candidate) => candidate.file === file);
  if (entry === undefined) throw new Error(`${file} is not in the SCHEMAS table`);
  return new Ajv2020({ strict: false }).compile(JSON.parse(renderSchema(entry)));
}

describe('published Kafka message schemas', () => {
  it('fact-message accepts what the pipeline accepts and refuses what it dead-letters', () => {
    const validate = validator('fact-message.schema.json');
    expect(validate({ facts: { amount: 1 } })).toBe(true);
    expect(validate({ facts: {}, domain: 'payments', session_id: null, fact_id: 'f-1' })).toBe(true);
    expect(validate({ domain: 'payments' })).toBe(false);
    expect(validate({ facts: [1] })).toBe(false);
    expect(validate({ facts: {}, domain: 3 })).toBe(false);
    expect(validate({ facts: {}, other: true })).toBe(false);
  });

  it('result-message describes the results the pipeline writes', () => {
    const validate = validator('result-message.schema.json');
    const result = buildResult(
      { execution_id: 'e', fired_rules: [2], actions: ['a'], latency_ms: 0.1, domain: null, revision: 3 },
      { topic: 'rules.facts', partition: 0, offset: '12' },
    );
    expect(validate(result)).toBe(true);
    expect(validate({ ...result, source: { ...result.source, offset: 12 } })).toBe(false);
  });

  it('session-result-message describes the session results the pipeline writes, and tells them from stateless ones', () => {
    const validate = validator('session-result-message.schema.json');
    const result = buildSessionResult(
      {
        session_id: 'stream:auth:user-1',
        fact_id: 'kafka:rules.facts:0:4',
        execution_id: 'e',
        fired_rules: [7],
        actions: ['lock_account'],
        latency_ms: 0.7,
        activated: [7],
        deactivated: [],
        fact_count: 3,
        revision: 58,
        replaced: false,
        duplicate: true,
      },
      { topic: 'rules.facts', partition: 0, offset: '4' },
    );
    expect(validate(result)).toBe(true);
    expect(validate({ ...result, fact_count: -1 })).toBe(false);
    const { activated: _activated, ...withoutActivated } = result;
    expect(validate(withoutActivated)).toBe(false);
    const stateless = buildResult(
      { execution_id: 'e', fired_rules: [], actions: [], latency_ms: 0, domain: null, revision: 1 },
      { topic: 'rules.facts', partition: 0, offset: '1' },
    );
    expect(validate(stateless)).toBe(false);
    expect(validator('result-message.schema.json')(result)).toBe(false);
  });

  it('dead-letter-headers describes the headers the pipeline writes, original ones included', () => {
    const validate = validator('dead-letter-headers.schema.json');
    const headers = deadLetterHeaders(
      { traceparent: 'tp' },
      { code: 'VALIDATION_ERROR', detail: 'value is not valid JSON', topic: 'rules.facts', partition: 1, offset: '7' },
    );
    const text = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, headerText(value)]));
    expect(validate(text)).toBe(true);
    expect(validate({ ...text, source_offset: 'seven' })).toBe(false);
  });
});
