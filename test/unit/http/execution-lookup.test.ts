import { describe, expect, it } from 'vitest';
import { newExecutionId } from '../../../src/evaluation/execution-id.ts';
import { findRecorded, MAX_WAITING_LOOKUPS } from '../../../src/http/routes/v1/executions.ts';
import type { ExecutionRecord } from '../../../src/store/index.ts';

/** A store whose executions are found from the given lookup on (never when undefined); counts the lookups. */
function storeFinding(fromLookup: number | undefined) {
  const calls = { count: 0 };
  const record = { execution_id: 'x' } as ExecutionRecord;
  const services = {
    store: {
      executions: {
        get: async () => {
          calls.count += 1;
          return fromLookup !== undefined && calls.count >= fromLookup ? record : undefined;
        },
      },
    },
  } as unknown as Parameters<typeof findRecorded>[0];
  return { services, calls, record };
}

describe('findRecorded', () => {
  it('finds a fresh id whose record arrives late, looking again after 100 and 200 ms', async () => {
    const { services, calls, record } = storeFinding(3);
    const waiting = { count: 0 };
    expect(await findRecorded(services, newExecutionId(), waiting)).toBe(record);
    expect(calls.count).toBe(3);
    expect(waiting.count).toBe(0);
  });

  it('looks four times in all for a fresh id never recorded, once for an old or non-v7 one', async () => {
    const fresh = storeFinding(undefined);
    expect(await findRecorded(fresh.services, newExecutionId(), { count: 0 })).toBeUndefined();
    expect(fresh.calls.count).toBe(4);
    const old = storeFinding(undefined);
    expect(await findRecorded(old.services, newExecutionId(Date.now() - 60_000), { count: 0 })).toBeUndefined();
    expect(await findRecorded(old.services, '8f14e45f-ceea-467f-a8f6-3b1e2f4c9d10', { count: 0 })).toBeUndefined();
    expect(old.calls.count).toBe(2);
  });

  it(`answers at once, after one look, while ${MAX_WAITING_LOOKUPS} lookups already wait`, async () => {
    const { services, calls } = storeFinding(undefined);
    const waiting = { count: MAX_WAITING_LOOKUPS };
    expect(await findRecorded(services, newExecutionId(), waiting)).toBeUndefined();
    expect(calls.count).toBe(1);
    expect(waiting.count).toBe(MAX_WAITING_LOOKUPS);
  });
});
