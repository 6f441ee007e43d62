import { describe, expect, it } from 'vitest';
import type { FactMessage } from '../../../src/contracts/kafka-messages.ts';
import { AppError } from '../../../src/errors.ts';
import { MAX_TURN_MS } from '../../../src/evaluation/event-loop-turns.ts';
import { BatchProcessor } from '../../../src/kafka/batch-processor.ts';
import type { InputMessage, KafkaEvaluation } from '../../../src/kafka/result-message.ts';
import { turnsDuring } from '../../helpers/event-loop-turns.ts';

let nextId = 0;
function evaluation(fact: FactMessage): KafkaEvaluation {
  nextId += 1;
  const amount = Number(fact.facts.amount ?? 0);
  return {
    execution_id: `e-${nextId}`,
    fired_rules: amount > 100 ? [1] : [],
    actions: amount > 100 ? ['review'] : [],
    latency_ms: 0.01,
    domain: fact.domain ?? null,
    revision: 4,
  };
}

const message = (offset: number, value: unknown, key = `k-${offset}`): InputMessage => ({
  key: Buffer.from(key),
  value: typeof value === 'string' ? Buffer.from(value) : Buffer.from(JSON.stringify(value)),
  offset: String(offset),
  headers: { 'correlation-id': `c-${offset}` },
});

const resultOf = (record: { value: unknown }) => JSON.parse(String(record.value)) as Record<string, unknown>;
const header = (record: { headers?: Record<string, unknown> }, name: string) => String(record.headers?.[name]);

describe('BatchProcessor', () => {
  it('answers every good message with a result, in input order', async () => {
    const processor = new BatchProcessor({ decoder: undefined, evaluate: evaluation, maxUnexpectedAttempts: 3 });
    const run = await processor.process('facts', 0, [
      message(10, { facts: { amount: 500 } }),
      message(11, { facts: { amount: 5 }, domain: 'x' }),
    ]);
    expect(run.deadLetters).toEqual([]);
    expect(run.retry).toBeUndefined();
    expect(run.lastHandledOffset).toBe('11');
    expect(run.results.map(resultOf)).toMatchObject([
      { fired_rules: [1], actions: ['review'], domain: null, revision: 4, source: { topic: 'facts', partition: 0, offset: '10' } },
      { fired_rules: [], actions: [], domain: 'x', source: { offset: '11' } },
    ]);
    expect(run.results.map((record) => String(record.key))).toEqual(['k-10', 'k-11']);
  });

  it('hands the evaluation each JSON message text as it came, so the execution record can reuse it', async () => {
    const seen: (string | undefined)[] = [];
    const processor = new BatchProcessor({
      decoder: undefined,
      evaluate: (fact, json) => {
        seen.push(json);
        return evaluation(fact);
      },
      maxUnexpectedAttempts: 3,
    });
    const text = '{ "facts": {"amount": 500},\n  "domain": "x" }';
    const run = await processor.process('facts', 0, [message(10, text), message(11, { facts: { amount: 5 } })]);
    expect(run.results).toHaveLength(2);
    expect(seen).toEqual([text, '{"facts":{"amount":5}}']);
  });

  it('dead-letters, with its original bytes, a fact whose result is over the result size limit, and goes on', async () => {
    const many = (fact: FactMessage): KafkaEvaluation => {
      const count = Number(fact.facts.fired ?? 0);
      return { ...evaluation(fact), fired_rules: Array.from({ length: count }, (_, i) => i + 1), actions: [] };
    };
    const small = await new BatchProcessor({ decoder: undefined, evaluate: many, maxUnexpectedAttempts: 3 }).process('facts', 0, [
      message(1, { facts: { fired: 0 } }),
    ]);
    const limit = Buffer.byteLength(String(small.results[0]!.value)) + 'k-1'.length + 40;
    const processor = new BatchProcessor({ decoder: undefined, evaluate: many, maxUnexpectedAttempts: 3, maxResultBytes: limit });
    const inputs = [message(1, { facts: { fired: 2 } }), message(2, { facts: { fired: 500 } }), message(3, { facts: { fired: 3 } })];
    const run = await processor.process('facts', 0, inputs);
    expect(run.retry).toBeUndefined();
    expect(run.lastHandledOffset).toBe('3');
    expect(run.results.map((record) => resultOf(record).source)).toMatchObject([{ offset: '1' }, { offset: '3' }]);
    expect(run.deadLetters).toHaveLength(1);
    const dead = run.deadLetters[0]!;
    expect(dead.value).toEqual(inputs[1]!.value);
    expect(header(dead, 'error_code')).toBe('PAYLOAD_TOO_LARGE');
    expect(header(dead, 'error_detail')).toMatch(
      new RegExp(
        `over the ${limit}-byte limit for one result message \\(KAFKA_MAX_RESULT_BYTES\\); the fact fired too many rules to publish$`,
      ),
    );
    expect(header(dead, 'source_offset')).toBe('2');
    // A key making most of the result is named as the cause: the result carries it.
    const keyed = await processor.process('facts', 0, [message(4, { facts: { fired: 0 } }, 'k'.repeat(limit))]);
    expect(header(keyed.deadLetters[0]!, 'error_detail')).toMatch(
      new RegExp(`; ${limit} of those bytes are the message key, which the result carries: send a shorter key$`),
    );
  });

  it('dead-letters a fact whose headers, carried onto its result, make it larger than the results topic takes', async () => {
    const processor = new BatchProcessor({
      decoder: undefined,
      evaluate: evaluation,
      maxUnexpectedAttempts: 3,
      resultBatchBytes: 20_000,
    });
    const heavy = { ...message(2, { facts: { amount: 500 } }), headers: { baggage: 'b'.repeat(30_000) } };
    const light = { ...message(3, { facts: { amount: 500 } }), headers: { baggage: 'b'.repeat(10_000) } };
    const run = await processor.process('facts', 0, [message(1, { facts: { amount: 5 } }), heavy, light]);
    expect(run.retry).toBeUndefined();
    expect(run.lastHandledOffset).toBe('3');
    expect(run.results.map((record) => resultOf(record).source)).toMatchObject([{ offset: '1' }, { offset: '3' }]);
    expect(run.results[1]!.headers?.baggage).toBe('b'.repeat(10_000));
    expect(run.deadLetters).toHaveLength(1);
    expect(run.deadLetters[0]!.value).toEqual(heavy.value);
    expect(header(run.deadLetters[0]!, 'error_code')).toBe('PAYLOAD_TOO_LARGE');
    expect(header(run.deadLetters[0]!, 'error_detail')).toMatch(
      /^the result with the 30\d{3} bytes of headers carried from the input is 30\d{3} bytes, over the 20000 bytes the results topic takes in one message/,
    );
  });

  it('sends a dead letter larger than the dead-letter topic takes with its reason and position only', async () => {
    const processor = new BatchProcessor({
      decoder: undefined,
      evaluate: evaluation,
      maxUnexpectedAttempts: 3,
      deadLetterBatchBytes: 5_000,
    });
    const bigValue = message(1, `{"facts": "${'x'.repeat(6_000)}`);
    const bigKey = message(2, '{"facts": 1}', 'k'.repeat(6_000));
    const small = message(3, '{"facts": 2}');
    const run = await processor.process('facts', 0, [bigValue, bigKey, small, message(4, { facts: { amount: 5 } })]);
    expect(run.lastHandledOffset).toBe('4');
    expect(run.results).toHaveLength(1);
    const [first, second, third] = run.deadLetters;
    expect(first!.value).toBeNull();
    expect(String(first!.key)).toBe('k-1');
    expect(first!.headers?.['correlation-id']).toBeUndefined();
    expect(header(first!, 'error_code')).toBe('VALIDATION_ERROR');
    expect(header(first!, 'source_offset')).toBe('1');
    expect(header(first!, 'error_detail')).toMatch(
      /^value is not valid JSON: .*\(original value and headers not copied: the dead letter would be 6\d{3} bytes, over the 5000 bytes the dead-letter topic takes in one message; read them at source_topic, source_partition, source_offset\)$/,
    );
    expect(header(first!, 'error_detail').length).toBeLessThanOrEqual(2_000);
    // A key too large to go along goes too: the reason and the position still reach the topic.
    expect(second!.key).toBeNull();
    expect(header(second!, 'source_offset')).toBe('2');
    expect(header(second!, 'error_detail')).toMatch(/^fact message does not match the schema: .*\(original value and headers not copied/);
    expect(third!.value).toEqual(small.value);
    expect(third!.headers?.['correlation-id']).toBe('c-3');
  });

  it('gives the event loop a turn every 256 evaluations of a long run', async () => {
    let turned = false;
    const seen: boolean[] = [];
    const processor = new BatchProcessor({
      decoder: undefined,
      evaluate: (fact) => {
        seen.push(turned);
        return evaluation(fact);
      },
      maxUnexpectedAttempts: 3,
    });
    setImmediate(() => {
      turned = true;
    });
    const run = await processor.process(
      'facts',
      0,
      Array.from({ length: 600 }, (_, index) => message(index, { facts: { n: index } })),
    );
    expect(run.results).toHaveLength(600);
    // Evaluated in one stretch up to the 256th, then after the loop's turn.
    expect(seen.indexOf(true)).toBe(256);
  });

  it('dead-letters every poison message with its reason and goes on with the rest', async () => {
    const processor = new BatchProcessor({ decoder: undefined, evaluate: evaluation, maxUnexpectedAttempts: 3 });
    const run = await processor.process('facts', 2, [
      message(0, '{not json'),
      message(1, { facts: { amount: 1 } }),
      message(2, { domain: 'x' }),
      message(3, { facts: [1] }),
      message(4, { facts: {}, domain: 12 }),
      message(5, { facts: { amount: 101 } }),
    ]);
    expect(run.results.map((record) => resultOf(record).source)).toEqual([
      { topic: 'facts', partition: 2, offset: '1' },
      { topic: 'facts', partition: 2, offset: '5' },
    ]);
    expect(run.deadLetters.map((record) => header(record, 'source_offset'))).toEqual(['0', '2', '3', '4']);
    expect(run.deadLetters.every((record) => header(record, 'error_code') === 'VALIDATION_ERROR')).toBe(true);
    expect(header(run.deadLetters[0]!, 'error_detail')).toMatch(/^value is not valid JSON/);
    expect(String(run.deadLetters[0]!.value)).toBe('{not json');
    expect(run.lastHandledOffset).toBe('5');
  });

  it('dead-letters an input error raised by the use case with its code', async () => {
    const processor = new BatchProcessor({
      decoder: undefined,
      evaluate: () => {
        throw new AppError('VALIDATION_ERROR', 'facts nest deeper than 64 levels');
      },
      maxUnexpectedAttempts: 3,
    });
    const run = await processor.process('facts', 0, [message(0, { facts: {} })]);
    expect(header(run.deadLetters[0]!, 'error_detail')).toBe('facts nest deeper than 64 levels');
  });

  it('stops at the first transient failure and leaves it and everything after it for redelivery', async () => {
    let calls = 0;
    const processor = new BatchProcessor({
      decoder: undefined,
      evaluate: async (fact) => {
        calls += 1;
        if (fact.facts.amount === 2) throw new AppError('UNAVAILABLE', 'the database is unavailable');
        return evaluation(fact);
      },
      maxUnexpectedAttempts: 3,
    });
    const run = await processor.process('facts', 0, [
      message(7, { facts: { amount: 1 } }),
      message(8, '{bad'),
      message(9, { facts: { amount: 2 } }),
      message(10, { facts: { amount: 3 } }),
    ]);
    expect(run.results).toHaveLength(1);
    expect(run.deadLetters).toHaveLength(1);
    expect(run.lastHandledOffset).toBe('8');
    expect(run.retry).toEqual({ offset: '9', attempt: 1, reason: 'the database is unavailable' });
    expect(calls).toBe(3);
  });

  it('publishes an undelivered run again from the evaluations it made, until it is delivered', async () => {
    let calls = 0;
    const processor = new BatchProcessor({
      decoder: undefined,
      evaluate: (fact) => {
        calls += 1;
        return evaluation(fact);
      },
      maxUnexpectedAttempts: 3,
    });
    const input = [message(20, { facts: { amount: 500 } }), message(21, '{bad'), message(22, { facts: { amount: 5 } })];
    const first = await processor.process('facts', 3, input);
    processor.undelivered('facts', 3);
    const again = await processor.process('facts', 3, input);
    expect(calls).toBe(2);
    expect(again.results.map(resultOf)).toEqual(first.results.map(resultOf));
    expect(again.deadLetters).toHaveLength(1);
    processor.delivered('facts', 3, again.lastHandledOffset!);
    // Delivered, the run is forgotten: the same offsets fetched again are new work.
    const later = await processor.process('facts', 3, input);
    expect(calls).toBe(4);
    expect(later.results.map((record) => resultOf(record).execution_id)).not.toEqual(
      first.results.map((record) => resultOf(record).execution_id),
    );
  });

  it('reports nothing handled when the first message must be retried', async () => {
    const processor = new BatchProcessor({
      decoder: { decode: () => Promise.reject(new AppError('UNAVAILABLE', 'registry down')) },
      evaluate: evaluation,
      maxUnexpectedAttempts: 3,
    });
    const run = await processor.process('facts', 0, [message(3, Buffer.from([0, 0, 0, 0, 1, 2]).toString('latin1'))]);
    expect(run.lastHandledOffset).toBeUndefined();
    expect(run.retry?.offset).toBe('3');
  });

  it('counts attempts at an unexpected failure across redeliveries and dead-letters it as INTERNAL_ERROR at the limit', async () => {
    const processor = new BatchProcessor({
      decoder: undefined,
      evaluate: () => {
        throw new RangeError('engine bug');
      },
      maxUnexpectedAttempts: 2,
    });
    const input = [message(4, { facts: {} })];
    const first = await processor.process('facts', 0, input);
    expect(first.retry).toMatchObject({ offset: '4', attempt: 1 });
    const second = await processor.process('facts', 0, input);
    expect(second.retry).toBeUndefined();
    expect(header(second.deadLetters[0]!, 'error_code')).toBe('INTERNAL_ERROR');
    expect(header(second.deadLetters[0]!, 'error_detail')).toBe('evaluation failed 2 times: engine bug');
    // The count is forgotten once the message is answered: the same offset on a new partition owner starts over.
    const third = await processor.process('facts', 0, input);
    expect(third.retry).toMatchObject({ attempt: 1 });
  });

  it('forgets attempts of partitions it no longer owns', async () => {
    const processor = new BatchProcessor({
      decoder: undefined,
      evaluate: () => {
        throw new RangeError('engine bug');
      },
      maxUnexpectedAttempts: 5,
    });
    await processor.process('facts', 1, [message(0, { facts: {} })]);
    await processor.process('facts', 2, [message(0, { facts: {} })]);
    processor.forgetPartitionsExcept('facts', new Set([2]));
    expect((await processor.process('facts', 1, [message(0, { facts: {} })])).retry?.attempt).toBe(1);
    expect((await processor.process('facts', 2, [message(0, { facts: {} })])).retry?.attempt).toBe(2);
  });

  it('gives the event loop a turn once a run has held it for MAX_TURN_MS, however few messages that took', async () => {
    const slow = (fact: FactMessage): KafkaEvaluation => {
      const until = performance.now() + MAX_TURN_MS + 2;
      while (performance.now() < until);
      return evaluation(fact);
    };
    const processor = new BatchProcessor({ decoder: undefined, evaluate: slow, maxUnexpectedAttempts: 3 });
    const { result: run, turns } = await turnsDuring(() =>
      processor.process(
        'facts',
        0,
        [0, 1, 2, 3].map((i) => message(i, { facts: { amount: i } })),
      ),
    );
    expect(run.results).toHaveLength(4);
    // Heartbeats, HTTP and readiness ran between the messages: one turn after each of the first three.
    expect(turns).toBeGreaterThanOrEqual(3);
  });
});
