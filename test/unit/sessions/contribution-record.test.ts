import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { contributionRecord, parseContributionRecord } from '../../../src/sessions/contribution-record.ts';

/** What JSON.parse makes of a record: the reading every record must get, however it is parsed. */
function reference(record: string) {
  const parsed = JSON.parse(record) as { t: string; s?: string; c: [string, string][] };
  return {
    eventTimeMs: Number(parsed.t),
    contributions: parsed.c.map(([id, value]) => [id, Number(value)]),
    seq: parsed.s === undefined ? 0 : Number(parsed.s),
  };
}

const accumulatorId = fc.stringMatching(/^[A-Za-z0-9._:-]{1,40}$/);
const number = fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer(), fc.constantFrom(0, -0, 1e21, 5e-324));

describe('contribution records', () => {
  it('reads back what it writes, exactly as JSON.parse reads it', () => {
    fc.assert(
      fc.property(
        number,
        fc.array(fc.tuple(accumulatorId, number), { maxLength: 20 }),
        fc.option(fc.nat(), { nil: undefined }),
        (eventTimeMs, contributions, seq) => {
          const record = contributionRecord({ eventTimeMs, contributions, ...(seq === undefined ? {} : { seq }) });
          expect(parseContributionRecord(record)).toEqual(reference(record));
          expect(parseContributionRecord(record)).toEqual({
            eventTimeMs: Number(String(eventTimeMs)),
            contributions: contributions.map(([id, value]) => [id, Number(String(value))]),
            // Records written before facts carried their seq read as 0: held before any that carry one.
            seq: seq ?? 0,
          });
        },
      ),
      { numRuns: 500 },
    );
  });

  it('reads any other JSON form of a record as JSON.parse does: spacing, escapes, key order, duplicate keys, extra items', () => {
    const text = fc.string({ unit: 'grapheme-composite', maxLength: 12 });
    const written = fc.record(
      {
        t: fc.oneof(text, number.map(String)),
        s: fc.oneof(text, fc.nat().map(String)),
        c: fc.array(fc.tuple(text, fc.oneof(text, number.map(String))), { maxLength: 5 }),
      },
      { requiredKeys: ['t', 'c'] },
    );
    fc.assert(
      fc.property(written, fc.constantFrom(0, 1, 2), (value, spacing) => {
        for (const record of [
          JSON.stringify(value),
          JSON.stringify(value, null, spacing),
          JSON.stringify({ c: value.c, t: value.t, s: value.s }),
        ]) {
          expect(parseContributionRecord(record)).toEqual(reference(record));
        }
      }),
      { numRuns: 500 },
    );
    for (const record of [
      '{"t":"1","c":[["a","2"]],"t":"3"}',
      '{"t":"1","c":[["a","2","x"]]}',
      '{"t":"1","c":[["a\\"b","2"]]}',
      '{"t":"1","c":[["a\\u0022,\\u0022b","2"]]}',
      '{"t":"1","c":[]}',
      '{"t":"1","s":"7","c":[["a","2"]]}',
      '{"t":"1","s":"","c":[]}',
      '{"t":"1","s":"x","c":[]}',
      '{"t":"","c":[["a",""]]}',
    ]) {
      expect(parseContributionRecord(record), record).toEqual(reference(record));
    }
  });
});
