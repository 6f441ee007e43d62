import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { RuleCatalog } from '../../../src/evaluation/rule-catalog.ts';
import { watchRuleRevision } from '../../../src/evaluation/rule-revision-watch.ts';
import type { StoredRule } from '../../../src/store/types.ts';

/** A store another instance writes to: its revision and rules move on without this instance's catalog being told. */
function sharedStore() {
  const state = { revision: 1, rules: [] as StoredRule[], down: false };
  const rule = (id: number): StoredRule => ({
    id,
    name: `r${id}`,
    domain: 'default',
    condition_dsl: { type: 'exists', field: 'a' },
    action: 'act',
    priority: 0,
    enabled: true,
    version: 1,
    created_at: '',
    updated_at: '',
  });
  return {
    state,
    addRule(id: number) {
      state.rules = [...state.rules, rule(id)];
      state.revision += 1;
    },
    rules: {
      snapshot: async () => ({ revision: state.revision, rules: state.rules }),
      revision: async () => {
        if (state.down) throw new Error('database away');
        return state.revision;
      },
    },
  };
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i += 1) await sleep(10);
}

describe('watchRuleRevision', () => {
  it("brings this instance's engine to a change made elsewhere within an interval", async () => {
    const store = sharedStore();
    const catalog = await RuleCatalog.open({ rules: store.rules });
    const watch = watchRuleRevision({ catalog, rules: store.rules, intervalMs: 20 });
    try {
      store.addRule(7);
      await until(() => catalog.revision === 2);
      expect(catalog.revision).toBe(2);
      expect(catalog.engine.evaluate({ a: 1 }).fired_rules).toEqual([7]);
    } finally {
      await watch.stop();
    }
  });

  it('reports the first failure of a run and the recovery, once each, and catches up after', async () => {
    const store = sharedStore();
    const catalog = await RuleCatalog.open({ rules: store.rules });
    const events: string[] = [];
    const watch = watchRuleRevision({
      catalog,
      rules: store.rules,
      intervalMs: 10,
      onError: (error) => events.push(`error: ${(error as Error).message}`),
      onRecovered: () => events.push('recovered'),
    });
    try {
      store.state.down = true;
      await sleep(100);
      store.addRule(8);
      store.state.down = false;
      await until(() => catalog.revision === 2);
      expect(catalog.revision).toBe(2);
      expect(events).toEqual(['error: database away', 'recovered']);
    } finally {
      await watch.stop();
    }
  });

  it("says once, not every interval, when the store's revision goes back below its own", async () => {
    const store = sharedStore();
    store.addRule(7);
    const catalog = await RuleCatalog.open({ rules: store.rules });
    const behind: [number, number][] = [];
    const watch = watchRuleRevision({
      catalog,
      rules: store.rules,
      intervalMs: 10,
      onStoreBehind: (ours, own) => behind.push([ours, own]),
    });
    try {
      // A restore of an older backup: revision 1, no rules.
      store.state.revision = 1;
      store.state.rules = [];
      await until(() => behind.length > 0);
      await sleep(80);
      expect(behind).toEqual([[1, 2]]);
      expect(catalog.revision).toBe(2);
    } finally {
      await watch.stop();
    }
  });
});
