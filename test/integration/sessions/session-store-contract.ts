// One behaviour, two stores: the Redis and in-process session stores must pass the same suite.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../../src/errors.ts';
import type { AccumulatorSpec, Contribution, SessionStore } from '../../../src/sessions/session-store.ts';

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

function spend(amount: number): Contribution[] {
  return [{ accumulatorId: count.id, value: 1 }, ...[sum, avg, min, max].map((s) => ({ accumulatorId: s.id, value: amount }))];
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
      const add = { factId: 'f', fact: {}, eventTimeMs: T0, contributions: [], specs: [], now: T0, maxFacts: 10 };
      expect(await store.addFact(id, add)).toBeUndefined();
      expect(await store.retractFact(id, 'f', { specs: [], now: T0 })).toBeUndefined();
      expect(await store.setFired(id, [1], 1)).toBeUndefined();
    });

    it('adds facts and keeps count, sum, avg, min and max', async () => {
      const id = await created();
      const base = { specs: SPECS, now: T0, maxFacts: 100, eventTimeMs: T0 };
      const first = await store.addFact(id, { ...base, factId: 'a', fact: { amount: 10 }, contributions: spend(10) });
      expect(first).toMatchObject({ factCount: 1, replaced: false, version: 1 });
      const third = await store.addFact(id, { ...base, factId: 'b', fact: { amount: 4 }, contributions: spend(4) });
      expect(third?.aggregates).toEqual({ [count.id]: 2, [sum.id]: 14, [avg.id]: 7, [min.id]: 4, [max.id]: 10 });
      const session = await store.get(id);
      expect(session?.facts).toEqual({ a: { amount: 10 }, b: { amount: 4 } });
      expect(session?.factCount).toBe(2);
      expect(session?.version).toBe(2);
    });

    it('reports null avg, min and max and zero count and sum for an empty session', async () => {
      const id = await created();
      const result = await store.retractFact(id, 'missing', { specs: SPECS, now: T0 });
      expect(result).toEqual({
        removed: false,
        factCount: 0,
        version: 0,
        aggregates: { [count.id]: 0, [sum.id]: 0, [avg.id]: null, [min.id]: null, [max.id]: null },
      });
    });

    it('replaces a fact with the same id and takes its old contributions back', async () => {
      const id = await created();
      const base = { specs: SPECS, now: T0, maxFacts: 100, eventTimeMs: T0 };
      await store.addFact(id, { ...base, factId: 'a', fact: { amount: 10 }, contributions: spend(10) });
      await store.addFact(id, { ...base, factId: 'b', fact: { amount: 50 }, contributions: spend(50) });
      const replaced = await store.addFact(id, { ...base, factId: 'b', fact: { amount: 2 }, contributions: spend(2) });
      expect(replaced).toMatchObject({ replaced: true, oldFact: { amount: 50 }, factCount: 2, version: 3 });
      expect(replaced?.aggregates).toEqual({ [count.id]: 2, [sum.id]: 12, [avg.id]: 6, [min.id]: 2, [max.id]: 10 });
    });

    it('replaces a contributing fact with one that contributes nothing', async () => {
      const id = await created();
      const base = { specs: SPECS, now: T0, maxFacts: 100, eventTimeMs: T0 };
      await store.addFact(id, { ...base, factId: 'a', fact: { amount: 10 }, contributions: spend(10) });
      const result = await store.addFact(id, { ...base, factId: 'a', fact: { other: true }, contributions: [] });
      expect(result?.aggregates).toEqual({ [count.id]: 0, [sum.id]: 0, [avg.id]: null, [min.id]: null, [max.id]: null });
      expect(result?.factCount).toBe(1);
    });

    it('retracts a fact and its contributions', async () => {
      const id = await created();
      const base = { specs: SPECS, now: T0, maxFacts: 100, eventTimeMs: T0 };
      await store.addFact(id, { ...base, factId: 'a', fact: { amount: 10 }, contributions: spend(10) });
      await store.addFact(id, { ...base, factId: 'b', fact: { amount: 30 }, contributions: spend(30) });
      const result = await store.retractFact(id, 'b', { specs: SPECS, now: T0 });
      expect(result).toMatchObject({ removed: true, factCount: 1, version: 3 });
      expect(result?.aggregates).toEqual({ [count.id]: 1, [sum.id]: 10, [avg.id]: 10, [min.id]: 10, [max.id]: 10 });
      const again = await store.retractFact(id, 'b', { specs: SPECS, now: T0 });
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
        });
      await add('a', 0, 100, 0);
      await add('b', 5, 7, 5);
      expect((await add('c', 9, 3, 9))?.aggregates).toEqual({ [failed10m.id]: 3, [spend10m.id]: 110, [max10m.id]: 100, [count.id]: 3 });
      // At minute 12, 'a' (minute 0) is older than 10 minutes and leaves every window; the unwindowed count keeps it.
      expect((await add('d', 12, 1, 12))?.aggregates).toEqual({ [failed10m.id]: 3, [spend10m.id]: 11, [max10m.id]: 7, [count.id]: 4 });
      // A late fact already outside the window is stored but counts only where there is no window.
      expect((await add('late', 1, 1000, 13))?.aggregates).toEqual({ [failed10m.id]: 3, [spend10m.id]: 11, [max10m.id]: 7, [count.id]: 5 });
      // Retracting an evicted fact takes nothing from the window a second time.
      const retracted = await store.retractFact(id, 'a', { specs, now: T0 + 13 * MINUTE });
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
      });
      expect(moved?.aggregates).toEqual({ [failed10m.id]: 2, [spend10m.id]: 4, [max10m.id]: 3, [count.id]: 4 });
      const later = await store.retractFact(id, 'nothing', { specs, now: T0 + 30 * MINUTE });
      expect(later?.aggregates).toEqual({ [failed10m.id]: 0, [spend10m.id]: 0, [max10m.id]: null, [count.id]: 4 });
    });

    it('keeps fractional sums exact enough and returns to zero when emptied', async () => {
      const id = await created();
      const specs = [sum];
      const base = { specs, now: T0, maxFacts: 100, eventTimeMs: T0 };
      await store.addFact(id, { ...base, factId: 'a', fact: {}, contributions: [{ accumulatorId: sum.id, value: 0.1 }] });
      const two = await store.addFact(id, { ...base, factId: 'b', fact: {}, contributions: [{ accumulatorId: sum.id, value: 0.2 }] });
      expect(two?.aggregates[sum.id]).toBeCloseTo(0.3, 12);
      await store.retractFact(id, 'a', { specs, now: T0 });
      const empty = await store.retractFact(id, 'b', { specs, now: T0 });
      expect(empty?.aggregates[sum.id]).toBe(0);
    });

    it('stores the fired set per version and hands back the previous one', async () => {
      const id = await created();
      const base = { specs: [], now: T0, maxFacts: 100, eventTimeMs: T0, contributions: [] };
      const v1 = await store.addFact(id, { ...base, factId: 'a', fact: {} });
      expect(await store.setFired(id, [1, 2], v1?.version ?? -1)).toEqual({ previous: [], applied: true });
      const v2 = await store.addFact(id, { ...base, factId: 'b', fact: {} });
      const v3 = await store.addFact(id, { ...base, factId: 'c', fact: {} });
      expect(await store.setFired(id, [2, 3], v3?.version ?? -1)).toEqual({ previous: [1, 2], applied: true });
      // The slower writer of version 2 must not overwrite the newer fired set.
      expect(await store.setFired(id, [9], v2?.version ?? -1)).toEqual({ previous: [2, 3], applied: false });
      expect((await store.get(id))?.firedRules).toEqual([2, 3]);
    });

    it('stores the aggregates with an applied fired set and hands them back on get', async () => {
      const id = await created();
      const base = { specs: SPECS, now: T0, maxFacts: 100, eventTimeMs: T0 };
      const a = await store.addFact(id, { ...base, factId: 'a', fact: { amount: 10 }, contributions: spend(10) });
      const b = await store.addFact(id, { ...base, factId: 'b', fact: { amount: 20 }, contributions: spend(20) });
      expect((await store.get(id))?.aggregates).toBeUndefined();
      const atB = { values: { ...b?.aggregates, 'float.x': 0.1 + 0.2, 'float.y': 1 / 3 }, asOf: T0 + 1 };
      expect(await store.setFired(id, [4], b?.version ?? -1, 'b', atB)).toEqual({ previous: [], applied: true });
      // Floats come back exactly (0.1 + 0.2 is not 0.3).
      const stored = (await store.get(id))?.aggregates;
      expect(stored).toEqual(atB);
      expect(stored?.values['float.x']).toBe(0.1 + 0.2);
      expect(stored?.values['float.y']).toBe(1 / 3);

      // A slower writer of an older version changes neither the fired set nor the aggregates.
      const stale = { values: { ...a?.aggregates, [min.id]: null }, asOf: T0 + 2 };
      expect(await store.setFired(id, [9], a?.version ?? -1, 'a', stale)).toEqual({ previous: [4], applied: false });
      expect(await store.get(id)).toMatchObject({ firedRules: [4], aggregates: { asOf: T0 + 1, values: { [count.id]: 2 } } });

      const retracted = await store.retractFact(id, 'a', { specs: SPECS, now: T0 });
      const afterRetract = { values: retracted?.aggregates ?? {}, asOf: T0 + 3 };
      expect(await store.setFired(id, [], retracted?.version ?? -1, undefined, afterRetract)).toMatchObject({ applied: true });
      expect((await store.get(id))?.aggregates).toEqual({
        values: { [count.id]: 1, [sum.id]: 20, [avg.id]: 20, [min.id]: 20, [max.id]: 20 },
        asOf: T0 + 3,
      });

      // A fired set stored without aggregates drops the old ones: they would no longer describe it.
      const c = await store.addFact(id, { ...base, factId: 'c', fact: {}, contributions: [] });
      expect(await store.setFired(id, [5], c?.version ?? -1, 'c')).toMatchObject({ applied: true });
      expect(await store.get(id)).toMatchObject({ firedRules: [5], aggregates: undefined });

      // Empty accumulators are stored as such: null for avg and min.
      const fresh = await created();
      const d = await store.addFact(fresh, { ...base, specs: [avg, min], factId: 'd', fact: {}, contributions: [] });
      expect(d?.aggregates).toEqual({ [avg.id]: null, [min.id]: null });
      await store.setFired(fresh, [], d?.version ?? -1, 'd', { values: d?.aggregates ?? {}, asOf: T0 + 4 });
      expect((await store.get(fresh))?.aggregates).toEqual({ values: { [avg.id]: null, [min.id]: null }, asOf: T0 + 4 });
    });

    it('remembers per fact id the change an applied add caused and hands it back for an identical re-send', async () => {
      const id = await created();
      const base = { specs: SPECS, now: T0, maxFacts: 100, eventTimeMs: T0 };
      const a = await store.addFact(id, { ...base, factId: 'a', fact: { amount: 10 }, contributions: spend(10) });
      expect(a).toMatchObject({ duplicate: false, change: undefined });
      expect(await store.setFired(id, [1, 2], a?.version ?? -1, 'a')).toEqual({ previous: [], applied: true });
      const b = await store.addFact(id, { ...base, factId: 'b', fact: { amount: 5 }, contributions: spend(5) });
      expect(await store.setFired(id, [2, 3], b?.version ?? -1, 'b')).toEqual({ previous: [1, 2], applied: true });

      // Same JSON, even with other contributions and a later event time: nothing is applied again.
      const again = await store.addFact(id, {
        ...base,
        factId: 'a',
        fact: { amount: 10 },
        eventTimeMs: T0 + MINUTE,
        contributions: spend(1000),
        now: T0 + MINUTE,
      });
      expect(again).toEqual({
        duplicate: true,
        change: { activated: [1, 2], deactivated: [] },
        replaced: false,
        oldFact: undefined,
        factCount: 2,
        version: 2,
        aggregates: { [count.id]: 2, [sum.id]: 15, [avg.id]: 7.5, [min.id]: 5, [max.id]: 10 },
      });
      const againB = await store.addFact(id, { ...base, factId: 'b', fact: { amount: 5 }, contributions: spend(5) });
      expect(againB).toMatchObject({ duplicate: true, change: { activated: [3], deactivated: [1] }, version: 2 });
      const session = await store.get(id);
      expect(session).toMatchObject({ version: 2, factCount: 2, firedRules: [2, 3], facts: { a: { amount: 10 }, b: { amount: 5 } } });
    });

    it('treats a different fact under the same id as a replacement and forgets the old change', async () => {
      const id = await created();
      const base = { specs: [count], now: T0, maxFacts: 100, eventTimeMs: T0, contributions: [{ accumulatorId: count.id, value: 1 }] };
      const first = await store.addFact(id, { ...base, factId: 'a', fact: { n: 1, m: 2 } });
      await store.setFired(id, [7], first?.version ?? -1, 'a');
      // Byte-identical JSON is the test: the same object with its keys in another order is another fact.
      const reordered = await store.addFact(id, { ...base, factId: 'a', fact: { m: 2, n: 1 } });
      expect(reordered).toMatchObject({ duplicate: false, replaced: true, oldFact: { n: 1, m: 2 }, change: undefined, version: 2 });
      // Its fired set was never stored: a re-send finds no change to report.
      const resend = await store.addFact(id, { ...base, factId: 'a', fact: { m: 2, n: 1 } });
      expect(resend).toMatchObject({ duplicate: true, change: undefined, version: 2, aggregates: { [count.id]: 1 } });
    });

    it('stores no change for a retraction, for a set-fired without a fact id, or for one a newer version beat', async () => {
      const id = await created();
      const base = { specs: [], now: T0, maxFacts: 100, eventTimeMs: T0, contributions: [] };
      const a = await store.addFact(id, { ...base, factId: 'a', fact: {} });
      expect(await store.setFired(id, [1], a?.version ?? -1)).toEqual({ previous: [], applied: true });
      expect(await store.addFact(id, { ...base, factId: 'a', fact: {} })).toMatchObject({ duplicate: true, change: undefined });
      const b = await store.addFact(id, { ...base, factId: 'b', fact: {} });
      const c = await store.addFact(id, { ...base, factId: 'c', fact: {} });
      expect(await store.setFired(id, [2], c?.version ?? -1, 'c')).toEqual({ previous: [1], applied: true });
      expect(await store.setFired(id, [9], b?.version ?? -1, 'b')).toEqual({ previous: [2], applied: false });
      expect(await store.addFact(id, { ...base, factId: 'b', fact: {} })).toMatchObject({ duplicate: true, change: undefined });
      expect(await store.addFact(id, { ...base, factId: 'c', fact: {} })).toMatchObject({
        duplicate: true,
        change: { activated: [2], deactivated: [1] },
      });
      const retracted = await store.retractFact(id, 'c', { specs: [], now: T0 });
      expect(await store.setFired(id, [], retracted?.version ?? -1)).toEqual({ previous: [2], applied: true });
      // Retracting c took its change with it: adding c again is a new write, not a duplicate.
      expect(await store.addFact(id, { ...base, factId: 'c', fact: {} })).toMatchObject({
        duplicate: false,
        replaced: false,
        change: undefined,
      });
    });

    it('refuses a new fact beyond the limit but still allows replacing one', async () => {
      const id = await created();
      const base = { specs: [count], now: T0, maxFacts: 2, eventTimeMs: T0 };
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
      });
      expect(write?.factCount).toBe(1);
      expect((await store.get(kept))?.expiresAt).toBe(T0 + 1200 + 2000);
      await new Promise((r) => setTimeout(r, 1000));
      expect(await store.get(expiring)).toBeUndefined();
      expect(
        await store.addFact(expiring, { factId: 'a', fact: {}, eventTimeMs: T0, contributions: [], specs: [], now: T0, maxFacts: 10 }),
      ).toBeUndefined();
      // 2.2 s after creation but only 1 s after its last write.
      expect((await store.get(kept))?.facts).toEqual({ a: {} });
    });

    it('moves expiresAt to now + ttl only once it has fallen more than ttl / 16 behind', async () => {
      const id = await created(16);
      const add = (factId: string, now: number) =>
        store.addFact(id, { factId, fact: { factId }, eventTimeMs: now, contributions: [], specs: [], now, maxFacts: 10 });
      // 16 s TTL: within 1 s of the last refresh a write leaves the expiry where it is.
      await add('a', T0 + 1000);
      expect((await store.get(id))?.expiresAt).toBe(T0 + 16_000);
      await add('b', T0 + 1001);
      expect((await store.get(id))?.expiresAt).toBe(T0 + 17_001);
      // A duplicate refreshes by the same rule.
      await add('b', T0 + 2001);
      expect((await store.get(id))?.expiresAt).toBe(T0 + 17_001);
      await add('b', T0 + 2002);
      expect((await store.get(id))?.expiresAt).toBe(T0 + 18_002);
      expect((await store.get(id))?.facts).toEqual({ a: { factId: 'a' }, b: { factId: 'b' } });
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
          });
        });
        const results = await Promise.all(adds);
        expect(results.filter((r) => r?.replaced).length).toBe(10);
        expect(new Set(results.map((r) => r?.version)).size).toBe(200);
        const final = await store.retractFact(id, 'none', { specs, now: T0 });
        expect(final).toMatchObject({ factCount: 190, version: 200 });
        expect(final?.aggregates).toEqual({ [count.id]: 190, [sum.id]: (189 * 190) / 2, [max.id]: 189 });
      } finally {
        for (const client of clients.slice(1)) await client.close();
      }
    });

    it('rejects bad input with VALIDATION_ERROR naming the problem', async () => {
      const id = await created();
      const base = { factId: 'a', fact: {}, eventTimeMs: T0, contributions: [], specs: [], now: T0, maxFacts: 10 };
      const cases: [Promise<unknown>, string][] = [
        [store.create({ id: 'bad{id}', rulesetId: 'rs', ttlSeconds: 60, now: T0 }), 'session id'],
        [store.create({ id: newId(), rulesetId: 'rs', ttlSeconds: 0, now: T0 }), 'ttl_seconds'],
        [store.create({ id: newId(), rulesetId: 'rs', ttlSeconds: 7 * 24 * 3600 + 1, now: T0 }), 'ttl_seconds'],
        [store.create({ id: newId(), rulesetId: '', ttlSeconds: 60, now: T0 }), 'ruleset id'],
        [store.get(''), 'session id'],
        [store.addFact(id, { ...base, factId: 'a b' }), 'fact id'],
        [store.addFact(id, { ...base, fact: undefined }), 'JSON value'],
        [store.addFact(id, { ...base, eventTimeMs: Number.NaN }), 'eventTimeMs'],
        [store.addFact(id, { ...base, maxFacts: 0 }), 'maxFacts'],
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
        [store.retractFact(id, '', { specs: [], now: T0 }), 'fact id'],
        [store.setFired(id, [1], -1), 'version'],
        [store.setFired(id, [1], 1, 'a{b}'), 'fact id'],
        [store.setFired(id, [1], 1, 'a', { values: {}, asOf: Number.NaN }), 'asOf'],
        [store.setFired(id, [1], 1, 'a', { values: { 'x{y}': 1 }, asOf: T0 }), 'accumulator id'],
        [store.setFired(id, [1], 1, 'a', { values: { x: Number.POSITIVE_INFINITY }, asOf: T0 }), 'finite number or null'],
        [store.setFired(id, [1], 1, 'a', { values: { x: '3' as unknown as number }, asOf: T0 }), 'finite number or null'],
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
