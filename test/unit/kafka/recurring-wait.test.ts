import { describe, expect, it } from 'vitest';
import { RecurringWait } from '../../../src/kafka/recurring-wait.ts';

/** A RecurringWait quiet for 60 s on a clock the test moves. */
function waitOnClock(): { wait: RecurringWait; advance: (ms: number) => void } {
  let now = 1_000_000;
  return { wait: new RecurringWait(60_000, () => now), advance: (ms) => (now += ms) };
}

describe('RecurringWait', () => {
  it('logs the first wait and its end, then keeps the waits of the next minute quiet, ends included', () => {
    const { wait, advance } = waitOnClock();
    expect(wait.begin()).toBe(0);
    advance(100);
    expect(wait.end()).toBe(true);
    for (let i = 0; i < 5; i++) {
      advance(100);
      expect(wait.begin()).toBeUndefined();
      advance(100);
      expect(wait.stillWaiting()).toBeUndefined();
      expect(wait.end()).toBe(false);
    }
  });

  it('logs the first wait after a quiet minute with the number of waits it kept quiet', () => {
    const { wait, advance } = waitOnClock();
    wait.begin();
    wait.end();
    for (let i = 0; i < 7; i++) {
      advance(1_000);
      wait.begin();
      wait.end();
    }
    advance(60_000);
    expect(wait.begin()).toBe(7);
    expect(wait.end()).toBe(true);
    advance(60_000);
    expect(wait.begin()).toBe(0);
  });

  it('logs a quiet wait once it has lasted a minute, not counting it among the unlogged, and then its end', () => {
    const { wait, advance } = waitOnClock();
    wait.begin();
    wait.end();
    advance(1_000);
    wait.begin();
    wait.end();
    advance(1_000);
    expect(wait.begin()).toBeUndefined();
    advance(59_999);
    expect(wait.stillWaiting()).toBeUndefined();
    advance(1);
    expect(wait.stillWaiting()).toBe(1);
    expect(wait.stillWaiting()).toBeUndefined();
    expect(wait.end()).toBe(true);
  });

  it('tells nothing more of a wait once it ended, however long after; a wait that begins then is judged afresh', () => {
    const { wait, advance } = waitOnClock();
    wait.begin();
    wait.end();
    advance(1_000);
    expect(wait.begin()).toBeUndefined();
    expect(wait.end()).toBe(false);
    advance(120_000);
    expect(wait.stillWaiting()).toBeUndefined();
    expect(wait.end()).toBe(false);
    expect(wait.begin()).toBe(1);
    expect(wait.end()).toBe(true);
    expect(wait.end()).toBe(false);
  });
});
