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
});
