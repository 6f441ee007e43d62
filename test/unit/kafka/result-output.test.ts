import type { Message } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { type Delivery, MAX_REQUEST_BYTES, produceRequests, recordBytes } from '../../../src/kafka/result-output.ts';

const topics = { resultsTopic: 'results', dlqTopic: 'dlq' };

function delivery(results: Message[], deadLetters: Message[]): Delivery {
  return { topic: 'facts', partition: 0, results, deadLetters, nextOffset: '1' };
}

const record = (index: number, bytes: number): Message => ({
  key: 'k',
  value: Buffer.alloc(bytes, 120),
  headers: { error_code: 'VALIDATION_ERROR', source_offset: String(index) },
});

const sizeOf = (messages: Message[]) =>
  messages.reduce((sum, m) => sum + (m.value as Buffer).length + 1 + 'error_code'.length + 'VALIDATION_ERROR'.length + 20, 0);

describe('produceRequests', () => {
  it('sends a usual run as one request with both topics', () => {
    const requests = produceRequests(topics, delivery([record(0, 100), record(1, 100)], [record(2, 100)]));
    expect(requests).toHaveLength(1);
    expect(requests[0]!.map((batch) => [batch.topic, batch.messages.length])).toEqual([
      ['results', 2],
      ['dlq', 1],
    ]);
    expect(produceRequests(topics, delivery([], []))).toEqual([]);
  });

  it('splits a run whose records outgrow one request, keeping every record once and in order', () => {
    const deadLetters = Array.from({ length: 1_000 }, (_, index) => record(index, 1_200));
    const requests = produceRequests(topics, delivery([record(-1, 50)], deadLetters));
    expect(requests.length).toBeGreaterThan(2);
    for (const request of requests) expect(sizeOf(request.flatMap((batch) => batch.messages))).toBeLessThanOrEqual(MAX_REQUEST_BYTES);
    const sent = requests.flatMap((request) =>
      request.flatMap((batch) => batch.messages.map((m) => [batch.topic, m.headers?.source_offset])),
    );
    expect(sent).toEqual([['results', '-1'], ...deadLetters.map((m) => ['dlq', m.headers?.source_offset])]);
  });

  it("keeps every request within the results topic's batch limit when that is smaller than a request", () => {
    const results = Array.from({ length: 200 }, (_, index) => record(index, 400));
    const requests = produceRequests({ ...topics, resultBatchBytes: 10_000 }, delivery(results, []));
    expect(requests.length).toBeGreaterThan(8);
    for (const request of requests) expect(sizeOf(request.flatMap((batch) => batch.messages))).toBeLessThanOrEqual(10_000);
    expect(requests.flatMap((request) => request.flatMap((batch) => batch.messages))).toEqual(results);
  });

  it("keeps each topic's part of a request within that topic's batch limit", () => {
    const results = Array.from({ length: 20 }, (_, index) => record(index, 400));
    const deadLetters = Array.from({ length: 50 }, (_, index) => record(100 + index, 400));
    const requests = produceRequests({ ...topics, deadLetterBatchBytes: 5_000 }, delivery(results, deadLetters));
    expect(requests.length).toBeGreaterThan(4);
    for (const request of requests)
      for (const batch of request) if (batch.topic === 'dlq') expect(sizeOf(batch.messages)).toBeLessThanOrEqual(5_000);
    // The results, ~10 KB, still go in the first request: the dead-letter topic's limit does not bound them.
    expect(requests[0]![0]!.messages).toEqual(results);
    expect(requests.flatMap((request) => request.flatMap((batch) => batch.messages))).toEqual([...results, ...deadLetters]);
  });

  it('sends a record larger than a request alone', () => {
    const requests = produceRequests(topics, delivery([record(0, 10), record(1, MAX_REQUEST_BYTES + 1), record(2, 10)], []));
    expect(requests.map((request) => request[0]!.messages.map((m) => m.headers?.source_offset))).toEqual([['0'], ['1'], ['2']]);
  });
});

describe('recordBytes', () => {
  it('counts a header repeated under one name with its name and lengths each time, as it goes on the wire', () => {
    const once = recordBytes({ key: 'k', value: 'v', headers: { trace: 'x'.repeat(40) } });
    const repeated = recordBytes({ key: 'k', value: 'v', headers: { trace: Array.from({ length: 100 }, () => 'x'.repeat(40)) } });
    // Each item: the 5-byte name, the 40-byte value and up to 10 bytes of length varints.
    expect(repeated - once).toBe(99 * (5 + 40 + 10));
  });
});
