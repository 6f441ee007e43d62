// The key that finds an execution's batch, and a batch's round trip through compression.
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { newExecutionId } from '../../../src/evaluation/execution-id.ts';
import {
  asExecutionRecord,
  BatchBuffer,
  decodeBatch,
  encodeBatch,
  executionIdKey,
  findInBatchJson,
} from '../../../src/store/execution-batches.ts';
import type { ExecutionRecord, SerializedExecution } from '../../../src/store/types.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function execution(overrides: Partial<ExecutionRecord> = {}): ExecutionRecord {
  return {
    execution_id: newExecutionId(),
    source: 'kafka',
    domain: null,
    facts: { amount: 12 },
    fired_rules: [1],
    actions: ['flag'],
    latency_ms: 0.5,
    revision: 4,
    created_at: '2026-01-01T00:00:00.000Z',
    ...overrides,
  };
}

describe('executionIdKey', () => {
  it('is the Unix milliseconds of a UUID v7 execution id', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 48 - 1 }), (ms) => {
        expect(executionIdKey(newExecutionId(ms))).toBe(ms);
      }),
    );
  });

  it('takes the first 48 bits of any UUID, in either case', () => {
    const id = randomUUID();
    const expected = Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
    expect(executionIdKey(id)).toBe(expected);
    expect(executionIdKey(id.toUpperCase())).toBe(expected);
  });

  it('is undefined for exactly the strings that are not UUIDs', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ minLength: 36, maxLength: 36 }),
          fc.uuid().map((id) => id.replace(/[0-9a-f]/, (c) => String.fromCharCode(c.charCodeAt(0) - 0x20))),
          fc.uuid(),
        ),
        (candidate) => {
          expect(executionIdKey(candidate) === undefined).toBe(!UUID.test(candidate));
        },
      ),
    );
    for (const bad of [
      '',
      'persisted-1',
      `${randomUUID()}0`,
      randomUUID().replaceAll('-', '_'),
      '0000000\u0010-0000-7000-8000-000000000000',
    ]) {
      expect(executionIdKey(bad), bad).toBeUndefined();
    }
  });
});

/** An execution handed over as texts, as the evaluator makes it. */
function texts(facts: Record<string, unknown>, createdMs = Date.now()): SerializedExecution {
  const id = newExecutionId(createdMs);
  return {
    execution_id: id,
    source: 'http',
    domain: 'payments',
    createdMs,
    requestJson: JSON.stringify({ facts }),
    outcomeJson: JSON.stringify({ execution_id: id, fired_rules: [2], actions: ['review'], latency_ms: 0.25, revision: 3 }),
  };
}

describe('BatchBuffer', () => {
  it('refuses what can never be stored, naming the execution, and stays as it was', async () => {
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    const batch = new BatchBuffer();
    const kept = execution();
    batch.add(kept);
    const bytes = batch.byteLength;
    expect(() => batch.add(execution({ execution_id: 'x' }))).toThrow('execution id "x" is not a lowercase UUID');
    // Lookups lowercase the id asked for: an uppercase one could never be found.
    const upper = execution().execution_id.toUpperCase();
    expect(() => batch.add(execution({ execution_id: upper }))).toThrow(`execution id "${upper}" is not a lowercase UUID`);
    expect(() => batch.add({ ...texts({}), execution_id: upper })).toThrow(`execution id "${upper}" is not a lowercase UUID`);
    expect(() => batch.add(execution({ facts: circular }))).toThrow(/is not JSON-serializable/);
    expect(() => batch.add(execution({ facts: { n: 1n } }))).toThrow(/is not JSON-serializable/);
    expect(() => batch.add(execution({ created_at: 'yesterday' }))).toThrow(/has no valid created_at/);
    // Dates JavaScript has and timestamptz lacks would fail their whole batch on every retry.
    expect(() => batch.add(execution({ created_at: '-005000-01-01T00:00:00.000Z' }))).toThrow(/has no valid created_at/);
    expect(() => batch.add(execution({ created_at: '+010000-01-01T00:00:00.000Z' }))).toThrow(/has no valid created_at/);
    expect(() => batch.add({ ...texts({}), execution_id: 'not-a-uuid' })).toThrow('execution id "not-a-uuid" is not a lowercase UUID');
    expect(() => batch.add({ ...texts({}), createdMs: -1 })).toThrow(/has no valid creation time/);
    // Year 10000 fits a v7 id but not timestamptz: it would fail its whole batch on every retry.
    expect(() => batch.add({ ...texts({}), createdMs: Date.parse('+010000-01-01T00:00:00.000Z') })).toThrow(/has no valid creation time/);
    expect(batch).toMatchObject({ count: 1, byteLength: bytes });
    expect(await decodeBatch((await batch.encode()).records)).toEqual([kept]);
  });

  it('stores the first and last dates timestamptz holds', async () => {
    const earliest = execution({ created_at: '0001-01-01T00:00:00.000Z' });
    const latest = execution({ created_at: '9999-12-31T23:59:59.999Z' });
    expect(await encodeBatch([earliest, latest])).toMatchObject({ newestAt: '9999-12-31T23:59:59.999Z' });
  });

  it('finds the latest record of an id, in either form, and nothing for an id it does not hold', () => {
    const batch = new BatchBuffer();
    const first = execution({ fired_rules: [1] });
    const handedOver = texts({ amount: 5, note: 'é 😀' });
    batch.add(first);
    batch.add(handedOver);
    const again = { ...first, fired_rules: [1, 2] };
    batch.add(again);
    expect(batch.find(first.execution_id)).toEqual(again);
    expect(batch.find(handedOver.execution_id)).toEqual(asExecutionRecord(handedOver));
    expect(batch.find(newExecutionId())).toBeUndefined();
    expect(batch.find(first.execution_id.toUpperCase())).toBeUndefined();
    // Characters whose low byte spells a hex digit must not match through a one-byte encoding of the search.
    expect(batch.find(first.execution_id.replace(/[0-9]/, (digit) => String.fromCharCode(0x100 + digit.charCodeAt(0))))).toBeUndefined();
    expect(batch.find('')).toBeUndefined();
    expect(new BatchBuffer().find(first.execution_id)).toBeUndefined();
  });

  it('grows past its first buffers, and a batch reusing them holds only its own records', async () => {
    const large = Array.from({ length: 300 }, (_, i) => execution({ facts: { i, text: 'x'.repeat(i * 7) } }));
    const written = new BatchBuffer();
    for (const record of large) written.add(record);
    expect(written.byteLength).toBeGreaterThan(64 * 1024);
    expect(await decodeBatch((await written.encode()).records)).toEqual(large);
    for (const record of [large[0]!, large[299]!]) expect(written.find(record.execution_id)).toEqual(record);

    const next = new BatchBuffer(written);
    const own = execution({ facts: { own: true } });
    next.add(own);
    expect(next.count).toBe(1);
    expect(next.find(large[0]!.execution_id)).toBeUndefined();
    expect(next.find(own.execution_id)).toEqual(own);
    expect(await decodeBatch((await next.encode()).records)).toEqual([own]);
  });

  it('compresses once and takes no record after', async () => {
    const batch = new BatchBuffer();
    batch.add(execution());
    const encoded = batch.encode();
    expect(batch.encode()).toBe(encoded);
    expect(() => batch.add(execution())).toThrow(/takes no more records/);
    expect((await encoded).count).toBe(1);
  });
});

describe('encodeBatch and decodeBatch', () => {
  it('round-trip the records and report their key range and newest time', async () => {
    const records = [
      execution({ execution_id: newExecutionId(5_000), created_at: '2026-01-02T00:00:00.000Z' }),
      execution({ execution_id: newExecutionId(1_000), created_at: '2026-01-03T00:00:00.000Z', facts: { text: 'nul \u0000, 😀' } }),
      execution({ execution_id: newExecutionId(9_000), created_at: '2026-01-01T00:00:00.000Z', domain: 'payments' }),
    ];
    const batch = await encodeBatch(records);
    expect(batch).toMatchObject({ count: 3, minKey: 1_000, maxKey: 9_000, newestAt: '2026-01-03T00:00:00.000Z' });
    expect(await decodeBatch(batch.records)).toEqual(records);
  });

  it('round-trip any text in any mix of both record forms, whatever share of it is beyond ASCII', async () => {
    const facts = fc.dictionary(fc.string({ unit: 'binary', maxLength: 8 }), fc.string({ unit: 'binary', maxLength: 40 }), { maxKeys: 4 });
    const texts = fc.record({ facts, domain: fc.option(fc.string({ unit: 'grapheme', maxLength: 6 }), { nil: null }) });
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.boolean(), texts), { minLength: 1, maxLength: 30 }), async (items) => {
        const handedOver = items.map(([asTexts, { facts, domain }], index) => {
          const createdMs = 1_000 + index;
          const id = newExecutionId(createdMs);
          if (!asTexts) return execution({ execution_id: id, facts, domain, created_at: new Date(createdMs).toISOString() });
          const outcomeJson = JSON.stringify({ execution_id: id, fired_rules: [index], actions: ['é'], latency_ms: 1, revision: 2 });
          return { execution_id: id, source: 'http' as const, domain, createdMs, requestJson: JSON.stringify({ facts }), outcomeJson };
        });
        const batch = await encodeBatch(handedOver);
        expect(await decodeBatch(batch.records)).toEqual(handedOver.map(asExecutionRecord));
      }),
      { numRuns: 200 },
    );
  });

  it('find a record through its end offsets: the latest with the id, never one whose facts only mention it', () => {
    const mentioned = execution({ fired_rules: [1] });
    const mentioning = execution({ facts: { see: mentioned.execution_id, also: [mentioned.execution_id] } });
    const handedOver = texts({ refers_to: mentioned.execution_id, note: 'é 😀' });
    const batch = new BatchBuffer();
    for (const record of [mentioned, mentioning, { ...mentioned, fired_rules: [1, 2] }, handedOver, execution()]) batch.add(record);
    const { json, ends } = batch.contents();
    const find = (id: string): ExecutionRecord | undefined => findInBatchJson(Buffer.from(json), Buffer.from(ends), id);
    expect(find(mentioned.execution_id)).toEqual({ ...mentioned, fired_rules: [1, 2] });
    expect(find(mentioning.execution_id)).toEqual(mentioning);
    expect(find(handedOver.execution_id)).toEqual(asExecutionRecord(handedOver));
    expect(find(newExecutionId())).toBeUndefined();
  });

  it('find by end offsets what a whole parse finds, for any records mentioning any ids', () => {
    const ids = Array.from({ length: 6 }, (_, i) => newExecutionId(1_000 + i));
    const record = fc.record({
      id: fc.constantFrom(...ids),
      mentions: fc.array(fc.constantFrom(...ids), { maxLength: 3 }),
      text: fc.string({ unit: 'binary', maxLength: 20 }),
      asTexts: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(record, { minLength: 1, maxLength: 12 }), (items) => {
        const batch = new BatchBuffer();
        const added = items.map(({ id, mentions, text, asTexts }, index) => {
          const facts = { mentions, text, index };
          if (!asTexts) return execution({ execution_id: id, facts });
          const outcomeJson = JSON.stringify({ execution_id: id, fired_rules: [index], actions: [], latency_ms: 1, revision: 2 });
          return {
            execution_id: id,
            source: 'http' as const,
            domain: null,
            createdMs: 1_000,
            requestJson: JSON.stringify({ facts }),
            outcomeJson,
          };
        });
        for (const item of added) batch.add(item);
        const { json, ends } = batch.contents();
        const whole = added.map(asExecutionRecord);
        for (const id of ids) {
          expect(findInBatchJson(Buffer.from(json), Buffer.from(ends), id)).toEqual(whole.findLast((r) => r.execution_id === id));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('refuses an empty batch', async () => {
    await expect(encodeBatch([])).rejects.toThrow(RangeError);
  });
});
