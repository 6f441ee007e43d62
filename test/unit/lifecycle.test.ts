import { describe, expect, it } from 'vitest';
import { Lifecycle, StopRequested } from '../../src/lifecycle.ts';

describe('Lifecycle', () => {
  it('closes what was opened newest first', async () => {
    const lifecycle = new Lifecycle();
    const closed: string[] = [];
    for (const name of ['store', 'sessions', 'http'])
      await lifecycle.open(
        name,
        () => name,
        (opened) => void closed.push(opened),
      );
    await lifecycle.closeAll();
    expect(closed).toEqual(['http', 'sessions', 'store']);
    // Nothing is closed twice.
    await lifecycle.closeAll();
    expect(closed).toHaveLength(3);
  });

  it('after a stop request, finishes the step in progress, keeps it for closing and ends start-up', async () => {
    const lifecycle = new Lifecycle();
    const closed: string[] = [];
    await lifecycle.open(
      'store',
      () => 'store',
      (opened) => void closed.push(opened),
    );
    const starting = lifecycle.open(
      'kafka',
      async () => {
        expect(lifecycle.requestStop('SIGTERM')).toBe(true);
        return 'kafka';
      },
      (opened) => void closed.push(opened),
    );
    await expect(starting).rejects.toThrow(new StopRequested('SIGTERM'));
    expect(lifecycle.requestStop('SIGINT')).toBe(false);
    expect(lifecycle.stopSignal).toBe('SIGTERM');
    await lifecycle.closeAll();
    expect(closed).toEqual(['kafka', 'store']);
  });

  it('keeps closing after a step fails and then names the first failure', async () => {
    const lifecycle = new Lifecycle();
    const closed: string[] = [];
    await lifecycle.open(
      'the store',
      () => 'store',
      (opened) => void closed.push(opened),
    );
    await lifecycle.open(
      'the Kafka pipeline',
      () => 'kafka',
      () => {
        throw new Error('broker gone');
      },
    );
    await lifecycle.open(
      'the HTTP server',
      () => 'http',
      async () => {
        throw new Error('still listening');
      },
    );
    const failure = await lifecycle.closeAll().then(
      () => undefined,
      (error: unknown) => error as Error,
    );
    expect(failure?.message).toBe('closing the HTTP server failed');
    expect((failure?.cause as Error | undefined)?.message).toBe('still listening');
    expect(closed).toEqual(['store']);
  });

  it('registers nothing when a step fails to open', async () => {
    const lifecycle = new Lifecycle();
    const closed: string[] = [];
    await expect(
      lifecycle.open(
        'the store',
        () => Promise.reject(new Error('refused')),
        () => void closed.push('store'),
      ),
    ).rejects.toThrow('refused');
    await lifecycle.closeAll();
    expect(closed).toEqual([]);
  });

  it('leaves a step with leaveBehindAfterMs behind once it has not finished that long after a stop, closing it should it open later', async () => {
    const lifecycle = new Lifecycle();
    const closed: string[] = [];
    await lifecycle.open(
      'the store',
      () => 'store',
      (opened) => void closed.push(opened),
    );
    let finish: (opened: string) => void = () => undefined;
    const joining = lifecycle.open(
      'the Kafka pipeline',
      () => new Promise<string>((resolve) => (finish = resolve)),
      (opened) => void closed.push(opened),
      { leaveBehindAfterMs: 50 },
    );
    await new Promise((resolve) => setTimeout(resolve, 20));
    lifecycle.requestStop('SIGTERM');
    const asked = performance.now();
    const stopped = await joining.then(
      () => undefined,
      (error: unknown) => error as StopRequested,
    );
    expect(performance.now() - asked).toBeGreaterThanOrEqual(45);
    expect(stopped).toBeInstanceOf(StopRequested);
    expect(stopped?.leftBehind).toBe('the Kafka pipeline');
    expect(lifecycle.stepInProgress).toBeUndefined();
    await lifecycle.closeAll();
    expect(closed).toEqual(['store']);
    // It opened after all: it is closed, not left open.
    finish('kafka');
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(closed).toEqual(['store', 'kafka']);
  });

  it('waits in closeAll for the close of a step left behind that opened meanwhile', async () => {
    const lifecycle = new Lifecycle();
    let finish: (opened: string) => void = () => undefined;
    let closedLate = false;
    const joining = lifecycle.open(
      'the Kafka pipeline',
      () => new Promise<string>((resolve) => (finish = resolve)),
      async () => {
        await new Promise((resolve) => setTimeout(resolve, 30));
        closedLate = true;
      },
      { leaveBehindAfterMs: 10 },
    );
    lifecycle.requestStop('SIGTERM');
    await expect(joining).rejects.toBeInstanceOf(StopRequested);
    finish('kafka');
    await new Promise((resolve) => setTimeout(resolve, 0));
    await lifecycle.closeAll();
    expect(closedLate).toBe(true);
  });

  it('waits for such a step when it finishes in time after the stop, keeping it for closing', async () => {
    const lifecycle = new Lifecycle();
    const closed: string[] = [];
    const joining = lifecycle.open(
      'the Kafka pipeline',
      async () => {
        lifecycle.requestStop('SIGINT');
        await new Promise((resolve) => setTimeout(resolve, 20));
        return 'kafka';
      },
      (opened) => void closed.push(opened),
      { leaveBehindAfterMs: 5_000 },
    );
    const stopped = await joining.then(
      () => undefined,
      (error: unknown) => error as StopRequested,
    );
    expect(stopped).toEqual(new StopRequested('SIGINT'));
    expect(stopped?.leftBehind).toBeUndefined();
    await lifecycle.closeAll();
    expect(closed).toEqual(['kafka']);
  });

  it('lets a step left behind fail later without an unhandled rejection', async () => {
    const lifecycle = new Lifecycle();
    let fail: (error: Error) => void = () => undefined;
    const joining = lifecycle.open(
      'the Kafka pipeline',
      () => new Promise<string>((_, reject) => (fail = reject)),
      () => undefined,
      { leaveBehindAfterMs: 10 },
    );
    lifecycle.requestStop('SIGTERM');
    await expect(joining).rejects.toBeInstanceOf(StopRequested);
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      fail(new Error('broker gone'));
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
