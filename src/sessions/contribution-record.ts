// The contribution record Redis keeps beside each session fact, written and read back on every copy a session is read into.
import type { StoredFact } from './working-memory.ts';

const OPEN = '{"t":"';
const SEQ = '","s":"';
const CONTRIBUTIONS = '","c":[';

type RecordParts = Pick<StoredFact, 'eventTimeMs' | 'contributions' | 'seq'>;

/**
 * `{"t":"<event ms>","s":"<seq>","c":[["<accumulator id>","<value>"],...]}`: numbers as strings, so none is rounded on
 * the way; records written before facts carried their seq have no `s`.
 */
export function contributionRecord(fact: RecordParts): string {
  let pairs = '';
  for (const [accumulatorId, value] of fact.contributions) {
    pairs += `${pairs === '' ? '' : ','}["${accumulatorId}","${String(value)}"]`;
  }
  const seq = fact.seq === undefined ? '' : `${SEQ}${String(fact.seq)}`;
  return `${OPEN}${String(fact.eventTimeMs)}${seq}${CONTRIBUTIONS}${pairs}]}`;
}

/**
 * A record back as the working memory keeps it. Records exactly as contributionRecord writes them (accumulator ids
 * need no escaping) are read by scanning, a read of a large session parsing thousands; any other JSON form by JSON.parse.
 */
export function parseContributionRecord(record: string): RecordParts & { readonly seq: number } {
  return scanRecord(record) ?? parseRecordJson(record);
}

function parseRecordJson(record: string): RecordParts & { readonly seq: number } {
  const parsed = JSON.parse(record) as { t: string; s?: string; c: [string, string][] };
  return {
    eventTimeMs: Number(parsed.t),
    contributions: parsed.c.map(([accumulatorId, value]) => [accumulatorId, Number(value)] as const),
    seq: parsed.s === undefined ? 0 : Number(parsed.s),
  };
}

/** Undefined for anything but contributionRecord's exact form, or a string part holding `\`. */
function scanRecord(record: string): (RecordParts & { readonly seq: number }) | undefined {
  if (!record.startsWith(OPEN) || record.includes('\\')) return undefined;
  let timeEnd = record.indexOf('"', OPEN.length);
  const eventTimeMs = Number(record.slice(OPEN.length, timeEnd));
  let seq = 0;
  if (timeEnd > 0 && record.startsWith(SEQ, timeEnd)) {
    const seqEnd = record.indexOf('"', timeEnd + SEQ.length);
    seq = Number(record.slice(timeEnd + SEQ.length, seqEnd));
    timeEnd = seqEnd;
  }
  if (timeEnd < 0 || !record.startsWith(CONTRIBUTIONS, timeEnd)) return undefined;
  const contributions: (readonly [string, number])[] = [];
  let at = timeEnd + CONTRIBUTIONS.length;
  if (record.charCodeAt(at) !== 93) {
    for (;;) {
      // ["<id>","<value>"]
      if (!record.startsWith('["', at)) return undefined;
      const idEnd = record.indexOf('"', at + 2);
      if (idEnd < 0 || !record.startsWith('","', idEnd)) return undefined;
      const valueEnd = record.indexOf('"', idEnd + 3);
      if (valueEnd < 0 || record.charCodeAt(valueEnd + 1) !== 93) return undefined;
      contributions.push([record.slice(at + 2, idEnd), Number(record.slice(idEnd + 3, valueEnd))]);
      at = valueEnd + 2;
      if (record.charCodeAt(at) !== 44) break;
      at += 1;
    }
  }
  return at === record.length - 2 && record.endsWith(']}') ? { eventTimeMs, contributions, seq } : undefined;
}
