import { describe, expect, it } from 'vitest';
import type { RuleInput } from '../../../src/contracts/rule.ts';
import { LiveEngine, RuleEngine } from '../../../src/engine/index.ts';
import { AppError } from '../../../src/errors.ts';

const rules = (action: string): RuleInput[] => [{ id: 1, name: 'r', condition_dsl: { type: 'exists', field: 'a' }, action }];

describe('LiveEngine', () => {
  it('serves the initial engine, then the replacement with the next revision', () => {
    const live = new LiveEngine(RuleEngine.compile(rules('old'), { revision: 3 }));
    expect(live.current.revision).toBe(3);
    const next = live.replace(rules('new'));
    expect(next.revision).toBe(4);
    expect(live.current).toBe(next);
    expect(live.current.evaluate({ a: 1 }).actions).toEqual(['new']);
  });

  it('uses a requested revision only when it is greater, so revisions only increase', () => {
    const live = new LiveEngine(RuleEngine.compile([], { revision: 10 }));
    expect(live.replace([], { revision: 20 }).revision).toBe(20);
    expect(live.replace([], { revision: 20 }).revision).toBe(21);
    expect(live.replace([], { revision: 5 }).revision).toBe(22);
    expect(live.current.revision).toBe(22);
  });

  it('keeps the current engine when the replacement does not compile', () => {
    const live = new LiveEngine(RuleEngine.compile(rules('old')));
    const before = live.current;
    expect(() => live.replace([{ id: 1, name: 'r', condition_dsl: { type: 'bogus' }, action: 'x' }])).toThrow(AppError);
    expect(live.current).toBe(before);
  });

  it('swaps in an engine compiled elsewhere only when its revision is greater', () => {
    const live = new LiveEngine(RuleEngine.compile([], { revision: 5 }));
    expect(live.swap(RuleEngine.compile([], { revision: 5 }))).toBe(false);
    expect(live.swap(RuleEngine.compile([], { revision: 4 }))).toBe(false);
    expect(live.current.revision).toBe(5);
    const newer = RuleEngine.compile([], { revision: 6 });
    expect(live.swap(newer)).toBe(true);
    expect(live.current).toBe(newer);
  });

  it('lets an evaluation that holds the old engine finish on it (the swap replaces, never mutates)', () => {
    const live = new LiveEngine(RuleEngine.compile(rules('old')));
    const held = live.current;
    live.replace(rules('new'));
    expect(held.evaluate({ a: 1 }).actions).toEqual(['old']);
    expect(live.current.evaluate({ a: 1 }).actions).toEqual(['new']);
  });
});
