// Execution ids are UUID v7: time-ordered, and the store finds a stored execution through the milliseconds at their front.
import { randomFillSync } from 'node:crypto';
import { executionIdKey } from '../store/execution-batches.ts';

const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));
// One randomFillSync per 409 ids: a call into the CSPRNG costs more than formatting an id.
const RANDOM_BYTES_PER_ID = 10;
const pool = Buffer.alloc(RANDOM_BYTES_PER_ID * 409);
let poolOffset = pool.length;
// Ids made in the same millisecond share their first 13 characters.
let prefixMs = -1;
let prefix = '';

function timePrefix(ms: number): string {
  if (ms !== prefixMs) {
    prefixMs = ms;
    const time = ms.toString(16).padStart(12, '0').slice(-12);
    prefix = `${time.slice(0, 8)}-${time.slice(8)}-7`;
  }
  return prefix;
}

/** A UUID v7 (RFC 9562): 48 bits of Unix milliseconds, version 7, the variant, then 74 bits from the CSPRNG. */
export function newExecutionId(nowMs: number = Date.now()): string {
  if (poolOffset === pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const at = poolOffset;
  poolOffset += RANDOM_BYTES_PER_ID;
  const b = pool;
  return (
    timePrefix(Math.trunc(nowMs)) +
    HEX[b[at]! & 0x0f]![1] +
    HEX[b[at + 1]!] +
    '-' +
    HEX[(b[at + 2]! & 0x3f) | 0x80] +
    HEX[b[at + 3]!] +
    '-' +
    HEX[b[at + 4]!] +
    HEX[b[at + 5]!] +
    HEX[b[at + 6]!] +
    HEX[b[at + 7]!] +
    HEX[b[at + 8]!] +
    HEX[b[at + 9]!]
  );
}

/** The Unix milliseconds at the front of a UUID v7 (the key the store finds it by), or undefined for any other id. */
export function executionIdTime(id: string): number | undefined {
  return id[14] === '7' ? executionIdKey(id) : undefined;
}
