import { describe, expect, it } from 'vitest';
import { AppError } from '../../../src/errors.ts';
import { executionsKeepingUp, refuseWhileBacklogged, withBulkUnderWay } from '../../../src/http/services.ts';

/** What the backlog check reads: `pending` records of 100 bytes waiting, the limit at 1,000, `underWay` from bulks. */
function services(pending: number, underWay: number) {
  return {
    config: { executionBacklogMax: 1_000 },
    store: { executions: { pendingCount: () => pending, pendingBytes: () => pending * 100 } },
    bulkUnderWay: { weight: underWay },
  } as unknown as Parameters<typeof refuseWhileBacklogged>[0] & Parameters<typeof executionsKeepingUp>[0];
}

function refusal(pending: number, underWay: number): AppError | undefined {
  try {
    refuseWhileBacklogged(services(pending, underWay));
    return undefined;
  } catch (error) {
    return error as AppError;
  }
}

describe('refuseWhileBacklogged', () => {
  it('lets a request through while the backlog and the bulks under way stay under the limit', () => {
    expect(refusal(0, 0)).toBeUndefined();
    expect(refusal(500, 499)).toBeUndefined();
  });

  it('blames the database only when the records waiting pass the limit by themselves', () => {
    const behind = refusal(1_000, 200);
    expect(behind?.code).toBe('UNAVAILABLE');
    expect(behind?.message).toBe(
      'Execution records are not being written (1000 waiting, 100000 bytes, 200 more from bulk requests under way; the database is behind or away); try again later.',
    );
    expect(executionsKeepingUp(services(1_000, 200))).toBe(false);
  });

  it('says when only the bulks under way pass it, while readiness stays up', () => {
    const busy = refusal(10, 2_000);
    expect(busy?.code).toBe('UNAVAILABLE');
    expect(busy?.message).toBe(
      'Bulk requests under way will record 2000 executions, which with those waiting to be written (10 waiting, 1000 bytes) pass RULES_EXECUTION_BACKLOG_MAX; try again shortly.',
    );
    expect(executionsKeepingUp(services(10, 2_000))).toBe(true);
  });
});

describe('withBulkUnderWay', () => {
  it('counts the weight while the work runs and takes it off however the work ends', async () => {
    const counted = services(0, 0);
    const seen = await withBulkUnderWay(counted, 300, async () => counted.bulkUnderWay.weight);
    expect(seen).toBe(300);
    expect(counted.bulkUnderWay.weight).toBe(0);
    await expect(
      withBulkUnderWay(counted, 300, async () => {
        throw new AppError('VALIDATION_ERROR', 'a record that cannot be stored');
      }),
    ).rejects.toThrow('a record that cannot be stored');
    expect(counted.bulkUnderWay.weight).toBe(0);
  });
});
