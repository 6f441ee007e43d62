import { describe, expect, it } from 'vitest';
import { describeError, waitUntil } from '../../../../dev/local-stack/wait-until.ts';

describe('waitUntil', () => {
  it('returns ok once the probe answers, after failures and false answers', async () => {
    let calls = 0;
    const outcome = await waitUntil(
      async () => {
        calls++;
        if (calls === 1) throw new Error('connection refused');
        return calls >= 3;
      },
      { timeoutMs: 10_000, intervalMs: 1 },
    );
    expect(outcome).toEqual({ ok: true });
    expect(calls).toBe(3);
  });

  it('gives up when the awaited process exits, keeping the last error', async () => {
    const outcome = await waitUntil(
      async () => {
        throw new Error('connection refused');
      },
      { timeoutMs: 60_000, intervalMs: 1, exited: Promise.resolve(1) },
    );
    expect(outcome).toMatchObject({ ok: false, reason: 'exited' });
    expect(outcome.ok ? undefined : describeError(outcome.lastError)).toBe('connection refused');
  });

  it('gives up at the deadline', async () => {
    const outcome = await waitUntil(async () => false, { timeoutMs: 0, intervalMs: 1 });
    expect(outcome).toMatchObject({ ok: false, reason: 'timeout' });
  });
});

describe('describeError', () => {
  it('uses the message of an Error and says "no answer" when there was none', () => {
    expect(describeError(new Error('boom'))).toBe('boom');
    expect(describeError(undefined)).toBe('no answer');
    expect(describeError('text')).toBe('text');
  });
});
