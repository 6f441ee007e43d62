// The contribution record Redis keeps beside each session fact, written and read back on every copy a session is read into.
import type { StoredFact } from './working-memory.ts';

const OPEN = '{"t":"';
const CONTRIBUTIONS = '","c":[';

/** `{"t":"<event ms>","c":[["<accumulator id>","<value>"],...]}`: numbers as strings, so none is rounded on the way. */
export function contributionRecord(fact: Pick<StoredFact, 'eventTimeMs' | 'contributions'>): string {
  let pairs = '';
  for (const [accumulatorId, value] of fact.contributions) {
    pairs += `${pairs === '' ? '' : ','}["${accumulatorId}","${String(value)}"]`;
  }
  return `${OPEN}${String(fact.eventTimeMs)}${CONTRIBUTIONS}${pairs}]}`;
}

/**
 * A record back as the working memory keeps it. Records exactly as contributionRecord writes them (accumulator ids
 * need no escaping) are read by scanning, a read of a large session parsing thousands; any other JSON form by JSON.parse.
 */
export function parseContributionRecord(record: string): Pick<StoredFact, 'eventTimeMs' | 'contributions'> {
  return scanRecord(record) ?? parseRecordJson(record);
}

function parseRecordJson(record: string): Pick<StoredFact, 'eventTimeMs' | 'contributions'> {
  const parsed = JSON.parse(record) as { t: string; c: [string, string][] };
  return {
    eventTimeMs: Number(parsed.t),
    contributions: parsed.c.map(([accumulatorId, value]) => [accumulatorId, Number(value)] as const),
  };
}

/** Undefined for anything but contributionRecord's exact form, or a string part holding `\`. */
function scanRecord(record: string): Pick<StoredFact, 'eventTimeMs' | 'contributions'> | undefined {
  if (!record.startsWith(OPEN) || record.includes('\\')) return undefined;
  const timeEnd = record.indexOf('"', OPEN.length);
  if (timeEnd < 0 || !record.startsWith(CONTRIBUTIONS, timeEnd)) return undefined;
  const eventTimeMs = Number(record.slice(OPEN.length, timeEnd));
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
  return at === record.length - 2 && record.endsWith(']}') ? { eventTimeMs, contributions } : undefined;
}
