// One behaviour, two stores: the Redis and in-process session stores must pass the same suite.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../../src/errors.ts';
import { type AccumulatorSpec, type Contribution, NewerRulesError, type SessionStore } from '../../../src/sessions/session-store.ts';
import { LET_GO_LENGTH } from '../../../src/sessions/working-memory.ts';

export interface SessionStoreHarness {
  /** Opens a store; stores opened by one harness share state (several Redis connections, or one process map). */
  open(): Promise<SessionStore>;
  /** Removes everything the run wrote. */
  cleanup(): Promise<void>;
}

const T0 = Date.parse('2026-01-01T00:00:00Z');
const MINUTE = 60_000;

const count: AccumulatorSpec = { id: 'logins.count', fn: 'count' };
const sum: AccumulatorSpec = { id: 'spend.sum', fn: 'sum' };
const avg: AccumulatorSpec = { id: 'spend.avg', fn: 'avg' };
const min: AccumulatorSpec = { id: 'spend.min', fn: 'min' };
const max: AccumulatorSpec = { id: 'spend.max', fn: 'max' };
const failed10m: AccumulatorSpec = { id: 'failed.10m', fn: 'count', windowMs: 10 * MINUTE };
const spend10m: AccumulatorSpec = { id: 'spend.10m', fn: 'sum', windowMs: 10 * MINUTE };
const max10m: AccumulatorSpec = { id: 'max.10m', fn: 'max', windowMs: 10 * MINUTE };
const SPECS = [count, sum, avg, min, max];

/** A ruleset in which no rule holds. */
const none = (): number[] => [];

/** A ruleset whose fired set is `ids`, recording the aggregates it was called with. */
function firing(ids: number[], calls: unknown[] = []): (aggregates: unknown) => number[] {
  return (aggregates) => {
    calls.push(aggregates);
    return ids;
  };
}

function spend(amount: number): Contribution[] {
  return [{ accumulatorId: count.id, value: 1 }, ...[sum, avg, min, max].map((s) => ({ accumulatorId: s.id, value: amount }))];
}

/** An add to a full streaming session (evictOldest) of at most `maxFacts` facts, as of ten minutes past T0. */
function streamAdd(
  client: SessionStore,
  id: string,
  add: { factId: string; amount: number; eventTimeMs: number; maxFacts: number; fire: (aggregates: unknown) => number[] },
) {
  return client.addFact(id, {
    factId: add.factId,
    fact: { amount: add.amount },
    eventTimeMs: add.eventTimeMs,
    contributions: spend(add.amount),
    specs: SPECS,
    now: T0 + 10 * MINUTE,
    maxFacts: add.maxFacts,
    fire: add.fire,
    evictOldest: true,
  });
}

async function rejection(promise: Promise<unknown>): Promise<AppError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof AppError)) throw new Error(`expected an AppError, got ${String(error)}`);
  return error;
}

export function sessionStoreContract(name: string, harness: SessionStoreHarness): void {
  describe(`${name} session store contract`, () => {
    let store: SessionStore;
    const newId = () => `s-${randomUUID()}`;

    async function created(ttlSeconds = 3600): Promise<string> {
      const id = newId();
      await store.create({ id, rulesetId: 'rs-1', ttlSeconds, now: T0 });
      return id;
    }

    beforeAll(async () => {
      store = await harness.open();
    });
    afterAll(async () => {
      await harness.cleanup();
      await store.close();
    });

    it('creates, reads and deletes a session', async () => {
      const id = newId();
      const info = await store.create({ id, rulesetId: 'rs-1', ttlSeconds: 60, now: T0 });
      expect(info).toEqual({ id, rulesetId: 'rs-1', createdAt: T0, expiresAt: T0 + 60_000, factCount: 0 });
      expect(await store.get(id)).toEqual({ ...info, facts: {}, firedRules: [], version: 0, aggregates: undefined });
      expect(await store.delete(id)).toBe(true);
      expect(await store.get(id)).toBeUndefined();
      expect(await store.delete(id)).toBe(false);
    });

    it('refuses a second session with the same id', async () => {
      const id = await created();
      const error = await rejection(store.create({ id, rulesetId: 'rs-2', ttlSeconds: 60, now: T0 }));
      expect(error.code).toBe('CONFLICT');
      expect(error.message).toContain('already exists');
    });

    it('answers undefined for an unknown session on every operation', async () => {
      const id = newId();
      expect(await store.get(id)).toBeUndefined();
      const add = { factId: 'f', fact: {}, eventTimeMs: T0, contributions: [], specs: [], now: T0, maxFacts: 10, fire: none };
      expect(await store.addFact(id, add)).toBeUndefined();
      expect(await store.retractFact(id, 'f', { specs: [], now: T0, fire: none })).toBeUndefined();
    });

    it('adds facts and keeps count, sum, avg, min and max', async () => {
      const id = await created();
      const base = { specs: SPECS, now: T0, maxFacts: 100, fire: none, eventTimeMs: T0 };
      const first = await store.addFact(id, { ...base, factId: 'a', fact: { amount: 10 }, contributions: spend(10) });
      expect(first).toMatchObject({ factCount: 1, replaced: false, version: 1 });
      const third = await store.addFact(id, { ...base, factId: 'b', fact: { amount: 4 }, contributions: spend(4) });
      expect(third?.aggregates).toEqual({ [count.id]: 2, [sum.id]: 14, [avg.id]: 7, [min.id]: 4, [max.id]: 10 });
      const session = await store.get(id);
      expect(session?.facts).toEqual({ a: { amount: 10 }, b: { amount: 4 } });
      expect(session?.factCount).toBe(2);
      expect(session?.version).toBe(2);
    });

    it('stores the aggregates as of where the windows ended, also when a later write brings an earlier clock', async () => {
      const id = await created();
      const base = { specs: [failed10m], maxFacts: 100, fire: none, fact: {}, contributions: [{ accumulatorId: failed10m.id, value: 1 }] };
      await store.addFact(id, { ...base, factId: 'a', now: T0 + 10 * MINUTE, eventTimeMs: T0 + 10 * MINUTE });
      // This writer's clock is behind: the window still ends where the first write left it, which b falls outside.
      const late = await store.addFact(id, { ...base, factId: 'b', now: T0, eventTimeMs: T0 - 5 * MINUTE });
      expect(late?.aggregates).toEqual({ [failed10m.id]: 1 });
      expect((await store.get(id))?.aggregates).toEqual({ values: { [failed10m.id]: 1 }, asOf: T0 + 10 * MINUTE });
    });

    it('keeps fact ids named like Object.prototype members as ordinary facts', async () => {
      const id = await created();
      const base = { specs: SPECS, now: T0, maxFacts: 100, fire: none, eventTimeMs: T0 };
      for (const [factId, amount] of [
        ['__proto__', 7],
        ['constructor', 8],
        ['toString', 9],
      ] as const) {
        await store.addFact(id, { ...base, factId, fact: { amount }, contributions: spend(amount) });
      }
      const session = await store.get(id);
      expect(session?.factCount).toBe(3);
      expect(Object.keys(session?.facts ?? {}).sort()).toEqual(['__proto__', 'constructor', 'toString']);
      expect(Object.hasOwn(session?.facts ?? {}, '__proto__')).toBe(true);
      expect(Object.getOwnPropertyDescriptor(session?.facts ?? {}, '__proto__')?.value).toEqual({ amount: 7 });
      expect(Object.getPrototypeOf(session?.facts)).toBe(Object.prototype);
    });

    it('reports null avg, min and max and zero count and sum for an empty session', async () => {
      const id = await created();
      const result = await store.retractFact(id, 'missing', { specs: SPECS, now: T0, fire: none });
      expect(result).toEqual({
        removed: false,
        factCount: 0,
        version: 0,
        change: { activated: [], deactivated: [] },
        aggregates: { [count.id]: 0, [sum.id]: 0, [avg.id]: null, [min.id]: null, [max.id]: null },
      });
    });

    it('replaces a fact with the same id and takes its old contributions back', async () => {
      const id = await created();
      const base = { specs: SPECS, now: T0, maxFacts: 100, fire: none, eventTimeMs: T0 };
      await store.addFact(id, { ...base, factId: 'a', fact: { amount: 10 }, contributions: spend(10) });
      await store.addFact(id, { ...base, factId: 'b', fact: { amount: 50 }, contributions: spend(50) });
      const replaced = await store.addFact(id, { ...base, factId: 'b', fact: { amount: 2 }, contributions: spend(2) });
      expect(replaced).toMatchObject({ replaced: true, factCount: 2, version: 3 });
      expect(replaced?.aggregates).toEqual({ [count.id]: 2, [sum.id]: 12, [avg.id]: 6, [min.id]: 2, [max.id]: 10 });
    });

    it('replaces a contributing fact with one that contributes nothing', async () => {
      const id = await created();
      const base = { specs: SPECS, now: T0, maxFacts: 100, fire: none, eventTimeMs: T0 };
      await store.addFact(id, { ...base, factId: 'a', fact: { amount: 10 }, contributions: spend(10) });
      const result = await store.addFact(id, { ...base, factId: 'a', fact: { other: true }, contributions: [] });
      expect(result?.aggregates).toEqual({ [count.id]: 0, [sum.id]: 0, [avg.id]: null, [min.id]: null, [max.id]: null });
      expect(result?.factCount).toBe(1);
    });

    it('retracts a fact and its contributions', async () => {
      const id = await created();
      const base = { specs: SPECS, now: T0, maxFacts: 100, fire: none, eventTimeMs: T0 };
      await store.addFact(id, { ...base, factId: 'a', fact: { amount: 10 }, contributions: spend(10) });
      await store.addFact(id, { ...base, factId: 'b', fact: { amount: 30 }, contributions: spend(30) });
      const result = await store.retractFact(id, 'b', { specs: SPECS, now: T0, fire: none });
      expect(result).toMatchObject({ removed: true, factCount: 1, version: 3 });
      expect(result?.aggregates).toEqual({ [count.id]: 1, [sum.id]: 10, [avg.id]: 10, [min.id]: 10, [max.id]: 10 });
      const again = await store.retractFact(id, 'b', { specs: SPECS, now: T0, fire: none });
      expect(again).toMatchObject({ removed: false, factCount: 1, version: 3 });
      expect((await store.get(id))?.facts).toEqual({ a: { amount: 10 } });
    });

    it('evicts facts from a window by event time, not arrival order', async () => {
      const id = await created();
      const specs = [failed10m, spend10m, max10m, count];
      const add = (factId: string, minute: number, amount: number, nowMinute: number) =>
        store.addFact(id, {
          factId,
          fact: { amount },
          eventTimeMs: T0 + minute * MINUTE,
          contributions: [
            { accumulatorId: failed10m.id, value: 1 },
            { accumulatorId: spend10m.id, value: amount },
            { accumulatorId: max10m.id, value: amount },
            { accumulatorId: count.id, value: 1 },
          ],
          specs,
          now: T0 + nowMinute * MINUTE,
          maxFacts: 100,
          fire: none,
        });
      await add('a', 0, 100, 0);
      await add('b', 5, 7, 5);
      expect((await add('c', 9, 3, 9))?.aggregates).toEqual({ [failed10m.id]: 3, [spend10m.id]: 110, [max10m.id]: 100, [count.id]: 3 });
      // At minute 12, 'a' (minute 0) is older than 10 minutes and leaves every window; the unwindowed count keeps it.
      expect((await add('d', 12, 1, 12))?.aggregates).toEqual({ [failed10m.id]: 3, [spend10m.id]: 11, [max10m.id]: 7, [count.id]: 4 });
      // A late fact already outside the window is stored but counts only where there is no window.
      expect((await add('late', 1, 1000, 13))?.aggregates).toEqual({ [failed10m.id]: 3, [spend10m.id]: 11, [max10m.id]: 7, [count.id]: 5 });
      // Retracting an evicted fact takes nothing from the window a second time.
      const retracted = await store.retractFact(id, 'a', { specs, now: T0 + 13 * MINUTE, fire: none });
      expect(retracted?.aggregates).toEqual({ [failed10m.id]: 3, [spend10m.id]: 11, [max10m.id]: 7, [count.id]: 4 });
      // Replacing an in-window fact with an older event time (its timestamp changed) moves it out of the window.
      const moved = await store.addFact(id, {
        factId: 'b',
        fact: { amount: 7, minute: 0 },
        eventTimeMs: T0,
        contributions: [
          { accumulatorId: failed10m.id, value: 1 },
          { accumulatorId: spend10m.id, value: 7 },
          { accumulatorId: max10m.id, value: 7 },
          { accumulatorId: count.id, value: 1 },
        ],
        specs,
        now: T0 + 13 * MINUTE,
        maxFacts: 100,
        fire: none,
      });
      expect(moved?.aggregates).toEqual({ [failed10m.id]: 2, [spend10m.id]: 4, [max10m.id]: 3, [count.id]: 4 });
      const later = await store.retractFact(id, 'nothing', { specs, now: T0 + 30 * MINUTE, fire: none });
      expect(later?.aggregates).toEqual({ [failed10m.id]: 0, [spend10m.id]: 0, [max10m.id]: null, [count.id]: 4 });
    });

    it('keeps fractional sums exact enough and returns to zero when emptied', async () => {
      const id = await created();
      const specs = [sum];
      const base = { specs, now: T0, maxFacts: 100, fire: none, eventTimeMs: T0 };
      await store.addFact(id, { ...base, factId: 'a', fact: {}, contributions: [{ accumulatorId: sum.id, value: 0.1 }] });
      const two = await store.addFact(id, { ...base, factId: 'b', fact: {}, contributions: [{ accumulatorId: sum.id, value: 0.2 }] });
      expect(two?.aggregates[sum.id]).toBeCloseTo(0.3, 12);
      await store.retractFact(id, 'a', { specs, now: T0, fire: none });
      const empty = await store.retractFact(id, 'b', { specs, now: T0, fire: none });
      expect(empty?.aggregates[sum.id]).toBe(0);
    });

    it('stores the fired set each write evaluates and reports the change against the one before', async () => {
      const id = await created();
      const base = { specs: SPECS, now: T0, maxFacts: 100, fire: none, eventTimeMs: T0 };
      const calls: unknown[] = [];
      const a = await store.addFact(id, {
        ...base,
        factId: 'a',
        fact: { amount: 10 },
        contributions: spend(10),
        fire: firing([1, 2], calls),
      });
      expect(a).toMatchObject({ duplicate: false, change: { activated: [1, 2], deactivated: [] }, version: 1 });
      // The rules see the aggregates the write returns.
      expect(calls.at(-1)).toEqual(a?.aggregates);
      const b = await store.addFact(id, {
        ...base,
        factId: 'b',
        fact: { amount: 5 },
        contributions: spend(5),
        fire: firing([2, 3], calls),
      });
      expect(b?.change).toEqual({ activated: [3], deactivated: [1] });
      expect(calls.at(-1)).toEqual({ [count.id]: 2, [sum.id]: 15, [avg.id]: 7.5, [min.id]: 5, [max.id]: 10 });
      expect((await store.get(id))?.firedRules).toEqual([2, 3]);
      const retracted = await store.retractFact(id, 'b', { specs: SPECS, now: T0, fire: firing([2], calls) });
      expect(retracted).toMatchObject({ removed: true, version: 3, change: { activated: [], deactivated: [3] } });
      expect(calls.at(-1)).toEqual(retracted?.aggregates);
      // Retracting what is not there evaluates nothing and changes nothing.
      const before = calls.length;
      const absent = await store.retractFact(id, 'b', { specs: SPECS, now: T0, fire: firing([9], calls) });
      expect(absent).toMatchObject({ removed: false, version: 3, change: { activated: [], deactivated: [] } });
      expect(calls.length).toBe(before);
      expect(await store.get(id)).toMatchObject({ firedRules: [2], version: 3 });
    });

    it('stores the aggregates with the fired set and hands them back on get', async () => {
      const id = await created();
      const base = { specs: SPECS, now: T0, maxFacts: 100, fire: none, eventTimeMs: T0 };
      expect((await store.get(id))?.aggregates).toBeUndefined();
      await store.addFact(id, { ...base, factId: 'a', fact: { amount: 10 }, contributions: spend(0.1) });
      const b = await store.addFact(id, { ...base, factId: 'b', fact: { amount: 20 }, contributions: spend(0.2), now: T0 + 1 });
      const stored = (await store.get(id))?.aggregates;
      expect(stored).toEqual({ values: b?.aggregates, asOf: T0 + 1 });
      // Floats come back exactly (0.1 + 0.2 is not 0.3).
      expect(stored?.values[sum.id]).toBe(0.1 + 0.2);
      expect(stored?.values[avg.id]).toBe((0.1 + 0.2) / 2);

      const retracted = await store.retractFact(id, 'a', { specs: SPECS, now: T0 + 3, fire: none });
      expect((await store.get(id))?.aggregates).toEqual({ values: retracted?.aggregates, asOf: T0 + 3 });
      // Compensated running sums: what is left is 0.2, where plain doubles would leave 0.1 + 0.2 - 0.1 (0.20000000000000004).
      const left = 0.2;
      expect(left).not.toBe(0.1 + 0.2 - 0.1);
      expect(retracted?.aggregates).toEqual({ [count.id]: 1, [sum.id]: left, [avg.id]: left, [min.id]: 0.2, [max.id]: 0.2 });

      // Empty accumulators are stored as such: null for avg and min; a sum past the double range as Infinity.
      const fresh = await created();
      const d = await store.addFact(fresh, { ...base, specs: [avg, min], factId: 'd', fact: {}, contributions: [], now: T0 + 4 });
      expect(d?.aggregates).toEqual({ [avg.id]: null, [min.id]: null });
      expect((await store.get(fresh))?.aggregates).toEqual({ values: { [avg.id]: null, [min.id]: null }, asOf: T0 + 4 });
      const huge = [{ accumulatorId: sum.id, value: Number.MAX_VALUE }];
      await store.addFact(fresh, { ...base, specs: [sum], factId: 'e', fact: 1, contributions: huge });
      const overflow = await store.addFact(fresh, { ...base, specs: [sum], factId: 'f', fact: 2, contributions: huge });
      expect(overflow?.aggregates[sum.id]).toBe(Number.POSITIVE_INFINITY);
      expect((await store.get(fresh))?.aggregates?.values).toEqual({ [sum.id]: Number.POSITIVE_INFINITY });
    });

    it('remembers per fact id the change an applied add caused and hands it back for an identical re-send', async () => {
      const id = await created();
      const base = { specs: SPECS, now: T0, maxFacts: 100, fire: none, eventTimeMs: T0 };
      await store.addFact(id, { ...base, factId: 'a', fact: { amount: 10 }, contributions: spend(10), fire: firing([1, 2]) });
      await store.addFact(id, { ...base, factId: 'b', fact: { amount: 5 }, contributions: spend(5), fire: firing([2, 3]) });

      // Same JSON, even with other contributions and a later event time: nothing is applied again, no rule evaluated.
      const calls: unknown[] = [];
      const again = await store.addFact(id, {
        ...base,
        factId: 'a',
        fact: { amount: 10 },
        eventTimeMs: T0 + MINUTE,
        contributions: spend(1000),
        now: T0 + MINUTE,
        fire: firing([9], calls),
      });
      expect(again).toEqual({
        duplicate: true,
        change: { activated: [1, 2], deactivated: [] },
        replaced: false,
        factCount: 2,
        version: 2,
        aggregates: { [count.id]: 2, [sum.id]: 15, [avg.id]: 7.5, [min.id]: 5, [max.id]: 10 },
      });
      expect(calls).toEqual([]);
      const againB = await store.addFact(id, { ...base, factId: 'b', fact: { amount: 5 }, contributions: spend(5), fire: firing([9]) });
      expect(againB).toMatchObject({ duplicate: true, change: { activated: [3], deactivated: [1] }, version: 2 });
      const session = await store.get(id);
      expect(session).toMatchObject({ version: 2, factCount: 2, firedRules: [2, 3], facts: { a: { amount: 10 }, b: { amount: 5 } } });
    });

    it('treats a different fact under the same id as a replacement and remembers its change instead', async () => {
      const id = await created();
      const base = {
        specs: [count],
        now: T0,
        maxFacts: 100,
        fire: none,
        eventTimeMs: T0,
        contributions: [{ accumulatorId: count.id, value: 1 }],
      };
      await store.addFact(id, { ...base, factId: 'a', fact: { n: 1, m: 2 }, fire: firing([7]) });
      // Byte-identical JSON is the test: the same object with its keys in another order is another fact.
      const reordered = await store.addFact(id, { ...base, factId: 'a', fact: { m: 2, n: 1 }, fire: firing([8]) });
      expect(reordered).toMatchObject({
        duplicate: false,
        replaced: true,
        change: { activated: [8], deactivated: [7] },
        version: 2,
      });
      const resend = await store.addFact(id, { ...base, factId: 'a', fact: { m: 2, n: 1 }, fire: firing([9]) });
      expect(resend).toMatchObject({
        duplicate: true,
        change: { activated: [8], deactivated: [7] },
        version: 2,
        aggregates: { [count.id]: 1 },
      });
    });

    it('forgets the change of a retracted fact: adding it again is a new write', async () => {
      const id = await created();
      const base = { specs: [], now: T0, maxFacts: 100, fire: none, eventTimeMs: T0, contributions: [] };
      await store.addFact(id, { ...base, factId: 'c', fact: {}, fire: firing([2]) });
      expect(await store.retractFact(id, 'c', { specs: [], now: T0, fire: none })).toMatchObject({
        change: { activated: [], deactivated: [2] },
      });
      expect(await store.addFact(id, { ...base, factId: 'c', fact: {}, fire: firing([2]) })).toMatchObject({
        duplicate: false,
        replaced: false,
        change: { activated: [2], deactivated: [] },
        version: 3,
      });
    });

    it('makes room for a new fact in a full session by retracting the oldest, when asked to, seen the same by every client', async () => {
      const id = await created();
      const add = (
        client: SessionStore,
        factId: string,
        amount: number,
        eventTimeMs: number,
        fire: (aggregates: unknown) => number[] = none,
      ) =>
        client.addFact(id, {
          factId,
          fact: { amount },
          eventTimeMs,
          contributions: spend(amount),
          specs: SPECS,
          now: T0 + 5 * MINUTE,
          maxFacts: 3,
          fire,
          evictOldest: true,
        });
      await add(store, 'b', 20, T0 + 2 * MINUTE, firing([9]));
      await add(store, 'a', 10, T0 + MINUTE, firing([9]));
      await add(store, 'c', 40, T0 + 3 * MINUTE, firing([9]));
      // 'a' is the oldest by event time (not the first added); its leaving is part of the same write.
      expect(await add(store, 'd', 80, T0 + 4 * MINUTE)).toMatchObject({
        factCount: 3,
        version: 5,
        aggregates: { [count.id]: 3, [sum.id]: 140, [min.id]: 20, [max.id]: 80 },
        change: { activated: [], deactivated: [9] },
      });
      const other = await harness.open();
      try {
        expect(await other.get(id)).toMatchObject({ factCount: 3, version: 5, firedRules: [] });
        expect(Object.keys((await other.get(id))?.facts ?? {}).sort()).toEqual(['b', 'c', 'd']);
        // The other client, from its own copy, makes room the same way.
        expect(await add(other, 'e', 160, T0 + 5 * MINUTE)).toMatchObject({
          factCount: 3,
          version: 7,
          aggregates: { [count.id]: 3, [sum.id]: 280, [min.id]: 40 },
        });
      } finally {
        await other.close();
      }
    });

    it('answers a redelivery of a fact let go to make room as the duplicate it is, on every client; the same id with a new fact is new', async () => {
      const id = await created();
      // f<n> happened n minutes in.
      const add = (client: SessionStore, factId: string, amount: number, fire: (aggregates: unknown) => number[] = none) =>
        streamAdd(client, id, { factId, amount, eventTimeMs: T0 + Number(factId.slice(1)) * MINUTE, maxFacts: 2, fire });
      // f1 turned rule 9 on; f3 let f1 go.
      expect((await add(store, 'f1', 10, firing([9])))?.change).toEqual({ activated: [9], deactivated: [] });
      await add(store, 'f2', 20, firing([9]));
      await add(store, 'f3', 30, firing([9]));
      const before = await store.get(id);
      expect(Object.keys(before?.facts ?? {}).sort()).toEqual(['f2', 'f3']);
      // A replayed run sends f1 again: nothing is applied, and the change its first write caused is reported again.
      const other = await harness.open();
      try {
        for (const client of [store, other]) {
          expect(await add(client, 'f1', 10, firing([]))).toMatchObject({
            duplicate: true,
            factCount: 2,
            version: before?.version,
            change: { activated: [9], deactivated: [] },
          });
        }
        expect(await other.get(id)).toMatchObject({ version: before?.version, facts: before?.facts });
        // A different fact under that id is a new one: applied, letting the oldest go.
        expect(await add(other, 'f1', 15, firing([9]))).toMatchObject({ duplicate: false, factCount: 2 });
        expect(Object.keys((await store.get(id))?.facts ?? {}).sort()).toEqual(['f1', 'f3']);
        // The first client learns of f2 let go by the other's write (with Redis, as its copy catches up): a duplicate.
        expect(await add(store, 'f2', 20, firing([9]))).toMatchObject({ duplicate: true, factCount: 2 });
      } finally {
        await other.close();
      }
    });

    it('keeps a fact let go and added back on every client, and a fact let go twice is remembered once, with its latest change', async () => {
      const id = await created();
      const add = (client: SessionStore, factId: string, amount: number, fire: (aggregates: unknown) => number[] = none) =>
        streamAdd(client, id, { factId, amount, eventTimeMs: T0, maxFacts: 1, fire });
      const other = await harness.open();
      try {
        await add(store, 'x', 10);
        await add(store, 'y', 1);
        // The other client's copy remembers x (10) let go.
        expect(await add(other, 'y', 1)).toMatchObject({ duplicate: true });
        await add(store, 'x', 20);
        await add(store, 'z', 5);
        // x (10) again on the first client, whose copy remembers x (20) let go: new, and held.
        expect(await add(store, 'x', 10)).toMatchObject({ duplicate: false });
        // The other client brings its copy up to date with x held (not taken for a redelivery), then lets it go.
        expect(await add(other, 'w', 7)).toMatchObject({ duplicate: false, factCount: 1, aggregates: { [count.id]: 1, [sum.id]: 7 } });
        expect(Object.keys((await store.get(id))?.facts ?? {})).toEqual(['w']);
        // x was let go twice: remembered once, as the latest (10), whose redelivery is a duplicate; 20's is a new fact.
        expect(await add(store, 'x', 10, firing([]))).toMatchObject({ duplicate: true, factCount: 1 });
        expect(await add(other, 'x', 20)).toMatchObject({ duplicate: false, factCount: 1 });
      } finally {
        await other.close();
      }
    });

    it('keeps the change of a fact forgotten and let go again within one add, which lets several facts go', async () => {
      const id = await created();
      const add = (factId: string, amount: number, maxFacts: number, fire: (aggregates: unknown) => number[]) =>
        streamAdd(store, id, { factId, amount, eventTimeMs: T0, maxFacts, fire });
      await add('f', 1, 1, firing([1]));
      for (let i = 0; i < LET_GO_LENGTH; i += 1) await add(`g${i}`, 1, 1, none);
      // f is the oldest of the 2,000 facts let go; held again, with a change of its own.
      expect((await add('f', 2, 3, firing([2])))?.change).toEqual({ activated: [2], deactivated: [] });
      // One add lets the last g go, which forgets f, then f itself, which lists it again.
      await add('h', 3, 1, firing([2]));
      expect(await add('f', 2, 1, none)).toMatchObject({ duplicate: true, change: { activated: [2], deactivated: [] } });
    });

    it('refuses a write evaluated under older rules than the session was last written under, and stores nothing of it', async () => {
      const id = await created();
      const other = await harness.open();
      const base = { specs: SPECS, now: T0, maxFacts: 100, fire: none, eventTimeMs: T0, contributions: spend(1) };
      const add = (client: SessionStore, factId: string, revision: number | undefined) =>
        client.addFact(id, { ...base, factId, fact: { factId }, revision });
      try {
        await add(store, 'a', 7);
        await expect(add(other, 'b', 6)).rejects.toThrow(NewerRulesError);
        await expect(add(other, 'b', 6)).rejects.toMatchObject({ revision: 7 });
        await expect(other.retractFact(id, 'a', { specs: SPECS, now: T0, fire: none, revision: 6 })).rejects.toMatchObject({
          revision: 7,
        });
        expect(await store.get(id)).toMatchObject({ version: 1, factCount: 1 });
        // The same revision, a newer one, or none (no check) is taken; the newest stays the bar.
        expect(await add(other, 'b', 7)).toMatchObject({ version: 2 });
        expect(await add(store, 'c', undefined)).toMatchObject({ version: 3 });
        expect(await add(other, 'd', 9)).toMatchObject({ version: 4 });
        await expect(add(store, 'e', 8)).rejects.toMatchObject({ revision: 9 });
        expect(await store.get(id)).toMatchObject({ version: 4, factCount: 4 });
      } finally {
        await other.close();
      }
    });

    it('refuses a new fact beyond the limit but still allows replacing one', async () => {
      const id = await created();
      const base = { specs: [count], now: T0, maxFacts: 2, fire: none, eventTimeMs: T0 };
      const one = [{ accumulatorId: count.id, value: 1 }];
      await store.addFact(id, { ...base, factId: 'a', fact: 1, contributions: one });
      await store.addFact(id, { ...base, factId: 'b', fact: 2, contributions: one });
      const error = await rejection(store.addFact(id, { ...base, factId: 'c', fact: 3, contributions: one }));
      expect(error.code).toBe('SESSION_FULL');
      expect(error.message).toContain('maximum of 2 facts');
      // A full session still answers an identical re-send: nothing new is stored.
      expect(await store.addFact(id, { ...base, factId: 'b', fact: 2, contributions: one })).toMatchObject({
        duplicate: true,
        factCount: 2,
      });
      const replaced = await store.addFact(id, { ...base, factId: 'b', fact: 22, contributions: one });
      expect(replaced).toMatchObject({ replaced: true, factCount: 2, aggregates: { [count.id]: 2 } });
    });

    it('expires a session after its TTL and refreshes the TTL on every write', async () => {
      const expiring = await created(1);
      const kept = await created(2);
      await new Promise((r) => setTimeout(r, 1200));
      const write = await store.addFact(kept, {
        factId: 'a',
        fact: {},
        eventTimeMs: T0,
        contributions: [],
        specs: [],
        now: T0 + 1200,
        maxFacts: 10,
        fire: none,
      });
      expect(write?.factCount).toBe(1);
      // Less than the TTL was left: the session lives a whole TTL past the write, and a sixteenth more.
      expect((await store.get(kept))?.expiresAt).toBe(T0 + 1200 + 2000 + 125);
      await new Promise((r) => setTimeout(r, 1000));
      expect(await store.get(expiring)).toBeUndefined();
      expect(
        await store.addFact(expiring, {
          factId: 'a',
          fact: {},
          eventTimeMs: T0,
          contributions: [],
          specs: [],
          now: T0,
          maxFacts: 10,
          fire: none,
        }),
      ).toBeUndefined();
      // 2.2 s after creation but only 1 s after its last write.
      expect((await store.get(kept))?.facts).toEqual({ a: {} });
    });

    it('counts 200 concurrent adds from several clients exactly once each', async () => {
      const clients = [store, await harness.open(), await harness.open(), await harness.open()];
      try {
        const id = await created();
        const specs = [count, sum, max];
        const adds = Array.from({ length: 200 }, (_, i) => {
          const client = clients[i % clients.length] ?? store;
          // Every tenth fact is sent twice: a replace must not count twice.
          const factId = `f-${i % 190}`;
          return client.addFact(id, {
            factId,
            fact: { i },
            eventTimeMs: T0,
            contributions: [
              { accumulatorId: count.id, value: 1 },
              { accumulatorId: sum.id, value: i % 190 },
              { accumulatorId: max.id, value: i % 190 },
            ],
            specs,
            now: T0,
            maxFacts: 10_000,
            fire: none,
          });
        });
        const results = await Promise.all(adds);
        expect(results.filter((r) => r?.replaced).length).toBe(10);
        expect(new Set(results.map((r) => r?.version)).size).toBe(200);
        const final = await store.retractFact(id, 'none', { specs, now: T0, fire: none });
        expect(final).toMatchObject({ factCount: 190, version: 200 });
        expect(final?.aggregates).toEqual({ [count.id]: 190, [sum.id]: (189 * 190) / 2, [max.id]: 189 });
      } finally {
        for (const client of clients.slice(1)) await client.close();
      }
    });

    it('rejects bad input with VALIDATION_ERROR naming the problem', async () => {
      const id = await created();
      const base = { factId: 'a', fact: {}, eventTimeMs: T0, contributions: [], specs: [], now: T0, maxFacts: 10, fire: none };
      const cases: [Promise<unknown>, string][] = [
        [store.create({ id: 'bad{id}', rulesetId: 'rs', ttlSeconds: 60, now: T0 }), 'session id'],
        [store.create({ id: newId(), rulesetId: 'rs', ttlSeconds: 0, now: T0 }), 'ttl_seconds'],
        [store.create({ id: newId(), rulesetId: 'rs', ttlSeconds: 7 * 24 * 3600 + 1, now: T0 }), 'ttl_seconds'],
        [store.create({ id: newId(), rulesetId: '', ttlSeconds: 60, now: T0 }), 'ruleset id'],
        [store.get(''), 'session id'],
        [store.addFact(id, { ...base, factId: 'a b' }), 'fact id'],
        [store.addFact(id, { ...base, fact: undefined }), 'JSON value'],
        [store.addFact(id, { ...base, eventTimeMs: Number.NaN }), 'eventTimeMs'],
        [store.addFact(id, { ...base, maxFacts: 0, fire: none }), 'maxFacts'],
        [store.addFact(id, { ...base, contributions: [{ accumulatorId: 'x', value: 1 }] }), 'undeclared accumulator'],
        [store.addFact(id, { ...base, specs: [count, count] }), 'declared twice'],
        [store.addFact(id, { ...base, specs: [{ id: 'w', fn: 'count', windowMs: -5 }] }), 'window'],
        [
          store.addFact(id, { ...base, specs: [sum], contributions: [{ accumulatorId: sum.id, value: Number.POSITIVE_INFINITY }] }),
          'finite',
        ],
        [
          store.addFact(id, {
            ...base,
            specs: [sum],
            contributions: [
              { accumulatorId: sum.id, value: 1 },
              { accumulatorId: sum.id, value: 2 },
            ],
          }),
          'contributes twice',
        ],
        [store.retractFact(id, '', { specs: [], now: T0, fire: none }), 'fact id'],
      ];
      for (const [promise, text] of cases) {
        const error = await rejection(promise);
        expect(error.code).toBe('VALIDATION_ERROR');
        expect(error.message).toContain(text);
      }
      expect(await store.get(id)).toMatchObject({ factCount: 0, firedRules: [], aggregates: undefined });
    });

    it('answers ping', async () => {
      expect(await store.ping()).toBe(true);
    });
  });
}
