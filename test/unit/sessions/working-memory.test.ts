import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AccumulatorSpec, Aggregates } from '../../../src/sessions/session-store.ts';
import { fingerprintOf, LET_GO_LENGTH, type StoredFact, WorkingMemory } from '../../../src/sessions/working-memory.ts';

/** The definition, computed from scratch: a fact counts when it contributed and is inside the window at the watermark. */
function reference(facts: ReadonlyMap<string, StoredFact>, specs: readonly AccumulatorSpec[], watermark: number): Aggregates {
  const out: Aggregates = {};
  for (const spec of specs) {
    const values: number[] = [];
    for (const fact of facts.values()) {
      if (spec.windowMs !== undefined && fact.eventTimeMs < watermark - spec.windowMs) continue;
      for (const [id, value] of fact.contributions) if (id === spec.id) values.push(value);
    }
    const sum = values.reduce((a, b) => a + b, 0);
    out[spec.id] = {
      count: values.length,
      sum,
      avg: values.length === 0 ? null : sum / values.length,
      min: values.length === 0 ? null : Math.min(...values),
      max: values.length === 0 ? null : Math.max(...values),
    }[spec.fn];
  }
  return out;
}

/** The exact sum of finite doubles (as integers of 2^-1074), rounded once to the nearest double, ties to even; ±Infinity past the largest. */
function roundedSum(values: readonly number[]): number {
  let exact = 0n;
  for (const value of values) exact += asScaledInteger(value);
  if (exact === 0n) return 0;
  const magnitude = exact < 0n ? -exact : exact;
  // Past the largest double by any amount: out of range (documented), where rounding would take a half unit back.
  if (magnitude > asScaledInteger(Number.MAX_VALUE)) return exact < 0n ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
  const shift = Math.max(0, magnitude.toString(2).length - 53);
  let mantissa = magnitude >> BigInt(shift);
  if (shift > 0) {
    const rest = magnitude - (mantissa << BigInt(shift));
    const half = 1n << BigInt(shift - 1);
    if (rest > half || (rest === half && (mantissa & 1n) === 1n)) mantissa += 1n;
  }
  const rounded = Number(mantissa) * 2 ** (shift - 1_074);
  return exact < 0n ? -rounded : rounded;
}

function asScaledInteger(value: number): bigint {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, value);
  const bits = view.getBigUint64(0);
  const exponent = Number((bits >> 52n) & 0x7ffn);
  const fraction = bits & ((1n << 52n) - 1n);
  const scaled = exponent === 0 ? fraction : (fraction | (1n << 52n)) << BigInt(exponent - 1);
  return bits >> 63n === 1n ? -scaled : scaled;
}

function expectClose(actual: Aggregates, expected: Aggregates): void {
  expect(Object.keys(actual)).toEqual(Object.keys(expected));
  for (const [id, value] of Object.entries(expected)) {
    if (value === null) expect(actual[id], id).toBeNull();
    else expect(actual[id], id).toBeCloseTo(value, 6);
  }
}

// Two specs lists over the same ids, as when rules change: a function or a window differs, one id comes and goes.
const SPECS_A: AccumulatorSpec[] = [
  { id: 'n', fn: 'count', windowMs: 10_000 },
  { id: 's', fn: 'sum', windowMs: 5_000 },
  { id: 'a', fn: 'avg' },
  { id: 'lo', fn: 'min', windowMs: 8_000 },
  { id: 'hi', fn: 'max' },
];
const SPECS_B: AccumulatorSpec[] = [
  { id: 'n', fn: 'count', windowMs: 3_000 },
  { id: 's', fn: 'max', windowMs: 5_000 },
  { id: 'lo', fn: 'min', windowMs: 8_000 },
  { id: 'x', fn: 'sum' },
];
const IDS = ['n', 's', 'a', 'lo', 'hi', 'x'];

type Step =
  | { kind: 'add'; factId: string; ageMs: number; values: (number | null)[]; specs: 'A' | 'B' }
  | { kind: 'retract'; factId: string; specs: 'A' | 'B' }
  | { kind: 'wait'; ms: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('add' as const),
      factId: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g'),
      ageMs: fc.integer({ min: -2, max: 12 }).map((seconds) => seconds * 1_000),
      values: fc.array(fc.option(fc.integer({ min: -50, max: 50 }), { nil: null }), { minLength: IDS.length, maxLength: IDS.length }),
      specs: fc.constantFrom('A' as const, 'B' as const),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('retract' as const),
      factId: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g'),
      specs: fc.constantFrom('A' as const, 'B' as const),
    }),
  },
  // Negative waits: another writer's clock behind the latest one.
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: -3, max: 6 }).map((s) => s * 1_000) }) },
);

describe('WorkingMemory', () => {
  it('answers every write as the definition computed from scratch, through any writes, clocks and spec changes', () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 60 }), (steps) => {
        const memory = new WorkingMemory();
        let now = 1_000_000;
        let json = 0;
        for (const s of steps) {
          if (s.kind === 'wait') {
            now += s.ms;
            continue;
          }
          const specs = s.specs === 'A' ? SPECS_A : SPECS_B;
          const names = new Set(specs.map((spec) => spec.id));
          if (s.kind === 'add') {
            const contributions = IDS.flatMap((id, i) => {
              const value = s.values[i];
              return value === null || value === undefined || !names.has(id) ? [] : [[id, value] as const];
            });
            json += 1;
            const fact = { json: `{"v":${json}}`, eventTimeMs: now - s.ageMs, contributions };
            expect(memory.add(s.factId, fact, specs, now, 100).kind).toBe('added');
          } else {
            memory.retract(s.factId, specs, now);
          }
          expect(memory.watermark).toBeGreaterThanOrEqual(now);
          expectClose(memory.aggregates(specs), reference(memory.facts, specs, memory.watermark));
          // Built again from the same facts, a working memory answers the same.
          const rebuilt = new WorkingMemory(new Map(memory.facts), memory.version, memory.watermark);
          expectClose(rebuilt.aggregates(specs), reference(memory.facts, specs, memory.watermark));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('takes a value back off a sum exactly, even one far larger than the rest or one that made the sum overflow', () => {
    const specs: AccumulatorSpec[] = [
      { id: 's', fn: 'sum' },
      { id: 'a', fn: 'avg', windowMs: 60_000 },
    ];
    const fact = (json: string, value: number): StoredFact => ({
      json,
      eventTimeMs: 0,
      contributions: [
        ['s', value],
        ['a', value],
      ],
    });
    const memory = new WorkingMemory();
    memory.add('big', fact('1', 1e16), specs, 0, 100);
    memory.add('one', fact('2', 1), specs, 0, 100);
    memory.retract('big', specs, 0);
    expect(memory.aggregates(specs)).toEqual({ s: 1, a: 1 });
    // Replaced by a small value beside a negative one: the sign must survive the cancellation.
    memory.add('big', fact('3', 1e16), specs, 0, 100);
    memory.add('neg', fact('4', -0.3), specs, 0, 100);
    memory.add('big', fact('5', 0.2), specs, 0, 100);
    expect(memory.aggregates(specs).s).toBeCloseTo(0.9, 12);
    memory.retract('one', specs, 0);
    expect(memory.aggregates(specs).s).toBeCloseTo(-0.1, 12);
    expect(memory.aggregates(specs).a).toBeCloseTo(-0.05, 12);

    const huge = new WorkingMemory();
    huge.add('a', fact('1', 1e308), specs, 0, 100);
    huge.add('b', fact('2', 1e308), specs, 0, 100);
    expect(huge.aggregates(specs).s).toBe(Number.POSITIVE_INFINITY);
    huge.retract('b', specs, 0);
    expect(huge.aggregates(specs)).toEqual({ s: 1e308, a: 1e308 });
    huge.add('c', fact('3', 1), specs, 0, 100);
    // Built again from the same facts, a working memory answers the same.
    expect(huge.aggregates(specs)).toEqual(new WorkingMemory(new Map(huge.facts), huge.version, huge.watermark).aggregates(specs));
  });

  it("keeps a sum exact, rounded once, through any adds and retractions, whatever the values' magnitudes", () => {
    const specs: AccumulatorSpec[] = [{ id: 's', fn: 'sum' }];
    // Finite doubles from 1e-20 to 1e300 and both signs, so cancellations lose what a running double would, and values at
    // the end of the range, whose additions may pass it on the way.
    const value = fc.oneof(
      {
        weight: 4,
        arbitrary: fc.tuple(fc.integer({ min: -9_999, max: 9_999 }), fc.integer({ min: -20, max: 300 })).map(([d, e]) => d * 10 ** e),
      },
      fc.constantFrom(Number.MAX_VALUE, -Number.MAX_VALUE, 8e307, -8e307, 2 ** 970, 1, -1),
    );
    const change = fc.record({ factId: fc.constantFrom('a', 'b', 'c', 'd', 'e'), value: fc.option(value, { nil: null }) });
    fc.assert(
      fc.property(fc.array(change, { minLength: 1, maxLength: 40 }), (changes) => {
        const memory = new WorkingMemory();
        const held = new Map<string, number>();
        changes.forEach(({ factId, value }, i) => {
          if (value === null) {
            memory.retract(factId, specs, 0);
            held.delete(factId);
          } else {
            memory.add(factId, { json: String(i), eventTimeMs: 0, contributions: [['s', value]] }, specs, 0, 100);
            held.set(factId, value);
          }
          const expected = roundedSum([...held.values()]);
          expect(memory.aggregates(specs).s).toBe(expected);
          expect(new WorkingMemory(new Map(memory.facts)).aggregates(specs).s).toBe(expected);
        });
      }),
      { numRuns: 2_000 },
    );
    // 1e300 and -1e300 taken back beside 1e16 and 1: a running double (even a compensated one) ends at 0.
    const memory = new WorkingMemory();
    for (const [id, amount] of [
      ['a', 1e300],
      ['b', -1e300],
      ['c', 1e16],
      ['d', 1],
    ] as const) {
      memory.add(id, { json: id, eventTimeMs: 0, contributions: [['s', amount]] }, specs, 0, 100);
    }
    for (const id of ['a', 'b', 'c']) memory.retract(id, specs, 0);
    expect(memory.aggregates(specs)).toEqual({ s: 1 });
  });

  it('brings a sum back into range whatever order its facts came in', () => {
    const specs: AccumulatorSpec[] = [
      { id: 's', fn: 'sum' },
      { id: 'a', fn: 'avg' },
    ];
    const fact = (value: number): StoredFact => ({
      json: String(value),
      eventTimeMs: 0,
      contributions: [
        ['s', value],
        ['a', value],
      ],
    });
    const values = { up: 1e308, again: 1e308, down: -1e308 };
    for (const order of [
      ['up', 'again', 'down'],
      ['up', 'down', 'again'],
      ['down', 'up', 'again'],
    ] as const) {
      const memory = new WorkingMemory();
      for (const id of order) memory.add(id, fact(values[id]), specs, 0, 100);
      expect(memory.aggregates(specs), order.join(',')).toEqual({ s: 1e308, a: 1e308 / 3 });
    }
    // An average is its sum over the count: out of range with its sum (documented), back with it.
    const twice = new WorkingMemory();
    twice.add('x', fact(1.5e308), specs, 0, 100);
    twice.add('y', fact(1.5e308), specs, 0, 100);
    expect(twice.aggregates(specs)).toEqual({ s: Number.POSITIVE_INFINITY, a: Number.POSITIVE_INFINITY });
    twice.add('z', fact(-1.5e308), specs, 0, 100);
    expect(twice.aggregates(specs)).toEqual({ s: 1.5e308, a: 5e307 });
  });

  it('holds at most maxBytes of fact JSON: refuses past it, or lets the oldest others go to make room', () => {
    const specs: AccumulatorSpec[] = [{ id: 'n', fn: 'count' }];
    const fact = (size: number, eventTimeMs: number): StoredFact => ({
      json: `"${'x'.repeat(size - 2)}"`,
      eventTimeMs,
      contributions: [['n', 1]],
    });
    const memory = new WorkingMemory();
    expect(memory.add('a', fact(400, 1), specs, 0, 100, { maxBytes: 1_000 }).kind).toBe('added');
    expect(memory.add('b', fact(400, 2), specs, 0, 100, { maxBytes: 1_000 }).kind).toBe('added');
    expect(memory.add('c', fact(400, 3), specs, 0, 100, { maxBytes: 1_000 })).toEqual({ kind: 'full', by: 'bytes' });
    // A replacement counts without the fact it replaces.
    expect(memory.add('b', fact(600, 2), specs, 0, 100, { maxBytes: 1_000 }).kind).toBe('added');
    expect(memory.bytes).toBe(1_000);
    // Larger than the whole allowance: refused even where the oldest may go.
    expect(memory.add('d', fact(1_001, 4), specs, 0, 100, { maxBytes: 1_000, evictOldest: true })).toEqual({ kind: 'full', by: 'fact' });
    const made = memory.add('d', fact(500, 4), specs, 0, 100, { maxBytes: 1_000, evictOldest: true });
    expect(made).toMatchObject({ kind: 'added', evicted: ['a', 'b'] });
    expect([memory.bytes, memory.facts.size, memory.aggregates(specs)]).toEqual([500, 1, { n: 1 }]);
    expect(new WorkingMemory(new Map(memory.facts)).bytes).toBe(500);
    expect(memory.retract('d', specs, 0)).toBeDefined();
    expect(memory.bytes).toBe(0);
  });

  it('applies nothing for the identical fact or for a new one past maxFacts, and bumps the version otherwise', () => {
    const memory = new WorkingMemory();
    const specs: AccumulatorSpec[] = [{ id: 'n', fn: 'count' }];
    const fact = (json: string): StoredFact => ({ json, eventTimeMs: 0, contributions: [['n', 1]] });
    // Each fact is stored with the version its add made.
    const held = (json: string, seq: number): StoredFact => ({ ...fact(json), seq });
    expect(memory.add('a', fact('1'), specs, 0, 2)).toEqual({
      kind: 'added',
      old: undefined,
      stored: held('1', 1),
      evicted: [],
      forgotten: [],
    });
    expect(memory.add('a', fact('1'), specs, 0, 2)).toEqual({ kind: 'duplicate' });
    expect(memory.add('b', fact('2'), specs, 0, 2).kind).toBe('added');
    expect(memory.add('c', fact('3'), specs, 0, 2)).toEqual({ kind: 'full', by: 'facts' });
    expect(memory.add('b', fact('22'), specs, 0, 2)).toEqual({
      kind: 'added',
      old: held('2', 2),
      stored: held('22', 3),
      evicted: [],
      forgotten: [],
    });
    expect(memory.version).toBe(3);
    expect(memory.aggregates(specs)).toEqual({ n: 2 });
    expect(memory.retract('b', specs, 0)).toEqual(held('22', 3));
    expect(memory.retract('b', specs, 0)).toBeUndefined();
    expect(memory.version).toBe(4);
    expect(memory.aggregates(specs)).toEqual({ n: 1 });
  });

  it("stamps a fact that arrived (no event time of its own) at the session's time when a writer's clock is behind it", () => {
    const memory = new WorkingMemory();
    const specs: AccumulatorSpec[] = [{ id: 'n', fn: 'count', windowMs: 60_000 }];
    const fact = (json: string, eventTimeMs: number): StoredFact => ({ json, eventTimeMs, contributions: [['n', 1]] });
    // A writer 90 s ahead moves the session's time on.
    expect(memory.add('ahead', fact('0', 90_000), specs, 90_000, 10, { arrival: true })).toMatchObject({ stored: fact('0', 90_000) });
    // One behind adds a fact at its own arrival time: it would fall outside the 60 s window that ends at 90 s.
    expect(memory.add('late', fact('1', 1_000), specs, 1_000, 10, { arrival: true })).toMatchObject({ stored: fact('1', 90_000) });
    expect(memory.aggregates(specs)).toEqual({ n: 2 });
    // A fact that names its event time keeps it, even outside the window.
    expect(memory.add('named', fact('2', 1_000), specs, 1_000, 10)).toMatchObject({ stored: fact('2', 1_000) });
    expect(memory.aggregates(specs)).toEqual({ n: 2 });
  });

  it('makes room in a full session by removing the facts with the oldest event time, when asked to', () => {
    const memory = new WorkingMemory();
    const specs: AccumulatorSpec[] = [{ id: 's', fn: 'sum' }];
    const fact = (value: number, eventTimeMs: number): StoredFact => ({ json: String(value), eventTimeMs, contributions: [['s', value]] });
    memory.add('b', fact(2, 200), specs, 0, 3);
    memory.add('a', fact(1, 100), specs, 0, 3);
    memory.add('c', fact(4, 300), specs, 0, 3);
    expect(memory.add('d', fact(8, 50), specs, 0, 3)).toEqual({ kind: 'full', by: 'facts' });
    expect(memory.add('d', fact(8, 50), specs, 0, 3, { evictOldest: true })).toMatchObject({ kind: 'added', evicted: ['a'] });
    expect([...memory.facts.keys()].sort()).toEqual(['b', 'c', 'd']);
    expect(memory.aggregates(specs)).toEqual({ s: 14 });
    // Each removal counts as a write, as it does in Redis; a lower limit removes as many as it takes.
    expect(memory.version).toBe(5);
    expect(memory.add('e', fact(16, 400), specs, 0, 2, { evictOldest: true })).toMatchObject({ evicted: ['d', 'b'] });
    expect(memory.aggregates(specs)).toEqual({ s: 20 });
    // A replacement needs no room.
    expect(memory.add('e', fact(32, 400), specs, 0, 2, { evictOldest: true })).toMatchObject({ evicted: [] });
  });

  it('makes room among facts of the same event time by the order they were added, whatever order a copy holds them in', () => {
    const specs: AccumulatorSpec[] = [{ id: 's', fn: 'sum' }];
    const fact = (value: number): StoredFact => ({ json: String(value), eventTimeMs: 100, contributions: [['s', value]] });
    const written = new WorkingMemory();
    for (const [id, value] of [
      ['f1', 1],
      ['f2', 2],
      ['f3', 3],
    ] as const)
      written.add(id, fact(value), specs, 0, 3);
    // A copy read elsewhere (Redis hands a hash back in no set order): the same facts, held in another order.
    const read = new WorkingMemory(new Map([...written.facts].reverse()), written.version, written.watermark);
    for (const memory of [written, read]) {
      expect(memory.add('f4', fact(4), specs, 0, 3, { evictOldest: true })).toMatchObject({ evicted: ['f1'] });
      expect(memory.add('f5', fact(5), specs, 0, 2, { evictOldest: true })).toMatchObject({ evicted: ['f2', 'f3'] });
      expect(memory.aggregates(specs)).toEqual({ s: 9 });
    }
    // A replacement is held from its replacement on; facts kept before versions were stored (seq 0) go first.
    const replaced = new WorkingMemory(new Map([['old', { ...fact(7), seq: 0 }]]), 5);
    replaced.add('a', fact(1), specs, 0, 3);
    replaced.add('b', fact(2), specs, 0, 3);
    replaced.add('a', fact(10), specs, 0, 3);
    expect(replaced.add('c', fact(3), specs, 0, 2, { evictOldest: true })).toMatchObject({ evicted: ['old', 'b'] });
  });

  it('remembers the facts it let go, once each and at most LET_GO_LENGTH, weighing one fact for every 16 of them', () => {
    const memory = new WorkingMemory();
    const fact = (json: string): StoredFact => ({ json, eventTimeMs: 0, contributions: [] });
    memory.add('a', fact('1'), [], 0, 1, { evictOldest: true });
    for (let i = 0; i < LET_GO_LENGTH + 10; i += 1) memory.add(`f${i}`, fact(String(i)), [], 0, 1, { evictOldest: true });
    // 'a' and f0..f8 were forgotten, the oldest first; the rest weigh 2,000 / 16 facts beside the one held.
    expect(memory.letGoFingerprint('a')).toBeUndefined();
    expect(memory.letGoFingerprint('f8')).toBeUndefined();
    expect(memory.letGoFingerprint('f9')).toBe(fingerprintOf('9'));
    expect(memory.weight).toBe(1 + LET_GO_LENGTH / 16);
    // A redelivery is a duplicate; another fact under a remembered id, or one the store holds (`known`), is new.
    expect(memory.add('f10', fact('10'), [], 0, 1, { evictOldest: true })).toEqual({ kind: 'duplicate' });
    expect(memory.add('f11', fact('x'), [], 0, 1, { evictOldest: true }).kind).toBe('added');
    expect(memory.add('f12', fact('12'), [], 0, 1, { evictOldest: true, known: true }).kind).toBe('added');
    // Let go again, f11 is remembered once, as its latest fact, at the end.
    memory.add('f13', fact('13'), [], 0, 1, { evictOldest: true });
    expect(memory.letGoFingerprint('f11')).toBe(fingerprintOf('x'));
    expect(memory.weight).toBe(1 + LET_GO_LENGTH / 16);
    // Fingerprints tell apart facts a 32-bit hash of the same length did not.
    expect(fingerprintOf('{"amount":100717786}')).not.toBe(fingerprintOf('{"amount":101456240}'));
  });

  it('weighs its facts one each, and one more for every 4 KB of JSON, through adds, replacements, removals and evictions', () => {
    const fact = (characters: number, eventTimeMs = 0): StoredFact => ({
      json: `"${'x'.repeat(characters - 2)}"`,
      eventTimeMs,
      contributions: [],
    });
    const memory = new WorkingMemory(new Map([['held', fact(9_000)]]));
    expect(memory.weight).toBe(3);
    memory.add('small', fact(300, 1), [], 0, 10);
    expect(memory.weight).toBe(4);
    memory.add('small', fact(4_096, 1), [], 0, 10);
    expect(memory.weight).toBe(5);
    memory.retract('held', [], 0);
    expect(memory.weight).toBe(2);
    memory.add('big', fact(40_960, 2), [], 0, 1, { evictOldest: true });
    expect([...memory.facts.keys()]).toEqual(['big']);
    expect(memory.weight).toBe(11);
  });

  it('makes room for one fact under a lowered limit in one sort, oldest first, ties in the order held', () => {
    const memory = new WorkingMemory();
    const specs: AccumulatorSpec[] = [{ id: 's', fn: 'sum' }];
    for (let i = 0; i < 20_000; i += 1) {
      memory.add(`f-${i}`, { json: String(i), eventTimeMs: 20_000 - Math.floor(i / 2), contributions: [['s', 1]] }, specs, 0, 100_000);
    }
    const started = performance.now();
    const outcome = memory.add('new', { json: 'n', eventTimeMs: 0, contributions: [['s', 1]] }, specs, 0, 1_000, { evictOldest: true });
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(outcome).toMatchObject({ kind: 'added' });
    const evicted = outcome.kind === 'added' ? outcome.evicted : [];
    expect(evicted).toHaveLength(19_001);
    // Event times fall two facts at a time: the last held are the oldest, and of each tied pair the first held goes first.
    expect(evicted.slice(0, 4)).toEqual(['f-19998', 'f-19999', 'f-19996', 'f-19997']);
    expect(memory.facts.size).toBe(1_000);
    expect(memory.aggregates(specs)).toEqual({ s: 1_000 });
  });

  it('moves time on for every write, the refused and the empty ones too, as write-session.lua stores it', () => {
    const memory = new WorkingMemory();
    const specs: AccumulatorSpec[] = [{ id: 'w', fn: 'count', windowMs: 10 }];
    const fact = (json: string, at: number): StoredFact => ({ json, eventTimeMs: at, contributions: [['w', 1]] });
    memory.add('a', fact('1', 0), specs, 0, 1);
    expect(memory.add('b', fact('2', 5), specs, 20, 1)).toEqual({ kind: 'full', by: 'facts' });
    expect(memory.watermark).toBe(20);
    expect(memory.aggregates(specs)).toEqual({ w: 0 });
    expect(memory.add('a', fact('1', 0), specs, 30, 1)).toEqual({ kind: 'duplicate' });
    expect(memory.retract('absent', specs, 40)).toBeUndefined();
    expect(memory.watermark).toBe(40);
    // Never backwards.
    memory.add('a', fact('3', 35), specs, 25, 1);
    expect(memory.watermark).toBe(40);
    expect(memory.aggregates(specs)).toEqual({ w: 1 });
  });
});
