// Execution ids are UUID v7: time-ordered, so the executions primary key grows at its end instead of at random places.
import { randomUUID } from 'node:crypto';

/** A UUID v7 (RFC 9562): 48 bits of Unix milliseconds, version 7, then 74 random bits from a v4 UUID. */
export function newExecutionId(nowMs: number = Date.now()): string {
  const time = Math.trunc(nowMs).toString(16).padStart(12, '0').slice(-12);
  // randomUUID is xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx; its variant and random bits are kept after the version nibble.
  return `${time.slice(0, 8)}-${time.slice(8)}-7${randomUUID().slice(15)}`;
}
