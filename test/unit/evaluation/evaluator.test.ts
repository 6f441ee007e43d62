import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RuleEngine } from '../../../src/engine/index.ts';
import { Evaluator, isoTimestamp } from '../../../src/evaluation/evaluator.ts';
import { MAX_TURN_MS } from '../../../src/evaluation/event-loop-turns.ts';
import { asExecutionRecord, executionIdKey } from '../../../src/store/execution-batches.ts';
import type { ExecutionRecord, SerializedExecution } from '../../../src/store/types.ts';
import { turnsDuring } from '../../helpers/event-loop-turns.ts';

const engine = RuleEngine.compile(
  [
    {
      id: 1,
      name: 'big',
      domain: 'payments',
      condition_dsl: { type: 'condition', field: 'amount', op: '>', value: 100 },
      action: 'review',
    },
    { id: 2, name: 'any', domain: 'shipping', condition_dsl: { type: 'exists', field: 'amount' }, action: 'ship', priority: 5 },
  ],
  { revision: 7 },
);

function setup() {
  const recorded: ExecutionRecord[] = [];
  const handedOver: (ExecutionRecord | SerializedExecution)[] = [];
  const observed: [string, number[]][] = [];
  const evaluator = new Evaluator({
    catalog: { engine },
    executions: {
      record: (execution) => {
        handedOver.push(execution);
        recorded.push(asExecutionRecord(execution));
      },
    },
    observer: (source, result) => observed.push([source, result.fired_rules]),
    bulkSliceSize: 3,
  });
  return { evaluator, recorded, handedOver, observed };
}

describe('Evaluator', () => {
  it('evaluates every domain when none is given, and records the execution', () => {
    const { evaluator, recorded, observed } = setup();
    const outcome = evaluator.evaluate({ amount: 500 });
    expect(outcome).toMatchObject({ fired_rules: [2, 1], actions: ['ship', 'review'], revision: 7 });
    expect(recorded).toEqual([
      {
        execution_id: outcome.execution_id,
        source: 'http',
        domain: null,
        facts: { amount: 500 },
        fired_rules: [2, 1],
        actions: ['ship', 'review'],
        latency_ms: outcome.latency_ms,
        revision: 7,
        created_at: expect.any(String),
      },
    ]);
    expect(observed).toEqual([['http', [2, 1]]]);
  });

  it('evaluates one domain and records the source it was given', () => {
    const { evaluator, recorded } = setup();
    expect(evaluator.evaluate({ amount: 500 }, { domain: 'payments', source: 'kafka' }).fired_rules).toEqual([1]);
    expect(recorded[0]).toMatchObject({ source: 'kafka', domain: 'payments' });
  });

  it('writes no execution record when asked not to, yet still answers with an execution id', () => {
    const { evaluator, recorded, observed } = setup();
    const outcome = evaluator.evaluate({ amount: 500 }, { domain: 'payments', source: 'kafka', record: false });
    expect(outcome.fired_rules).toEqual([1]);
    expect(outcome.execution_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(recorded).toEqual([]);
    expect(observed).toHaveLength(1);
  });

  it('answers evaluateToJson with the outcome as JSON, and records the same execution from that text and the request text', () => {
    const { evaluator, recorded, handedOver, observed } = setup();
    const requestJson = '{ "facts": {"amount": 1, "amount": 500, "tags": ["a\\u00e9"]},\n "domain": "payments" }';
    const before = Date.now();
    const json = evaluator.evaluateToJson({ amount: 500, tags: ['a\u00e9'] }, { domain: 'payments', requestJson });
    const outcome = JSON.parse(json);
    expect(outcome).toEqual({
      execution_id: expect.any(String),
      fired_rules: [1],
      actions: ['review'],
      latency_ms: expect.any(Number),
      revision: 7,
    });
    expect(recorded).toEqual([
      {
        execution_id: outcome.execution_id,
        source: 'http',
        domain: 'payments',
        // Read from the request text as JSON.parse reads it: the later of two equal keys wins, as it did for the evaluation.
        facts: { amount: 500, tags: ['a\u00e9'] },
        fired_rules: [1],
        actions: ['review'],
        latency_ms: outcome.latency_ms,
        revision: 7,
        created_at: expect.any(String),
      },
    ]);
    // The record is found through its id's time, which is the time it was handed over with.
    const { createdMs } = handedOver[0] as SerializedExecution;
    expect(createdMs).toBeGreaterThanOrEqual(before);
    expect(executionIdKey(outcome.execution_id)).toBe(createdMs);
    expect(recorded[0]?.created_at).toBe(new Date(createdMs).toISOString());
    expect(observed).toEqual([['http', [1]]]);
  });

  it('records an evaluation given its request text from that text, as it would have recorded the facts', () => {
    const { evaluator, recorded, handedOver } = setup();
    const requestJson = '{"facts": {"amount": 500}, "domain": "payments", "fact_id": "f-1"}';
    const outcome = evaluator.evaluate({ amount: 500 }, { domain: 'payments', source: 'kafka', requestJson });
    expect(handedOver[0]).toMatchObject({ requestJson, outcomeJson: JSON.stringify(outcome) });
    expect(recorded).toEqual([
      {
        execution_id: outcome.execution_id,
        source: 'kafka',
        domain: 'payments',
        facts: { amount: 500 },
        fired_rules: [1],
        actions: ['review'],
        latency_ms: outcome.latency_ms,
        revision: 7,
        created_at: new Date(executionIdKey(outcome.execution_id) ?? Number.NaN).toISOString(),
      },
    ]);
    expect(evaluator.evaluate({ amount: 500 }, { source: 'kafka', requestJson, record: false }).fired_rules).toEqual([2, 1]);
    expect(recorded).toHaveLength(1);
  });

  it('evaluates a bulk in input order with one id per fact, yielding between slices', async () => {
    const { evaluator, recorded } = setup();
    const facts = Array.from({ length: 10 }, (_, index) => ({ amount: index * 30 }));
    const outcomes = await evaluator.bulk(facts, { domain: 'payments' });
    expect(outcomes.map((outcome) => outcome.fired_rules)).toEqual(facts.map((fact) => (fact.amount > 100 ? [1] : [])));
    expect(new Set(outcomes.map((outcome) => outcome.execution_id)).size).toBe(10);
    expect(recorded.map((record) => [record.source, record.facts])).toEqual(facts.map((fact) => ['bulk', fact]));
  });
});

describe('Evaluator bulk on costly facts', () => {
  it('gives the event loop a turn once a slice has held it for MAX_TURN_MS, however few facts that took', async () => {
    const slow = {
      revision: engine.revision,
      // Each fact holds the event loop past MAX_TURN_MS, as rules with costly regexes over long texts can.
      evaluate: (...args: Parameters<RuleEngine['evaluate']>) => {
        const until = performance.now() + MAX_TURN_MS + 2;
        while (performance.now() < until);
        return engine.evaluate(...args);
      },
    } as unknown as RuleEngine;
    const evaluator = new Evaluator({ catalog: { engine: slow }, executions: { record: () => undefined }, bulkSliceSize: 1_000 });
    const { result: outcomes, turns } = await turnsDuring(() =>
      evaluator.bulk([{ amount: 1 }, { amount: 2 }, { amount: 3 }, { amount: 4 }]),
    );
    expect(outcomes).toHaveLength(4);
    // Other work ran between the facts: one turn after each of the first three.
    expect(turns).toBeGreaterThanOrEqual(3);
  });
});

describe('isoTimestamp', () => {
  it('formats like Date#toISOString, whichever second came before', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.integer({ min: -1e13, max: 8.64e15 }), fc.integer({ min: 1_700_000_000_000, max: 1_700_000_002_000 })), {
          minLength: 1,
        }),
        (times) => {
          for (const ms of times) expect(isoTimestamp(ms)).toBe(new Date(ms).toISOString());
        },
      ),
    );
  });

  it('formats fractions of a millisecond like Date#toISOString', () => {
    expect(isoTimestamp(1_700_000_000_123.75)).toBe(new Date(1_700_000_000_123.75).toISOString());
  });
});
