import { describe, expect, it, vi } from 'vitest';
import type { RuleInput } from '../../../src/contracts/rule.ts';
import { RuleCatalog, type RuleChange, toRuleInput } from '../../../src/evaluation/rule-catalog.ts';
import type { StoredRule } from '../../../src/store/types.ts';

const stamp = '2025-01-01T00:00:00.000Z';

function stored(id: number, overrides: Partial<StoredRule> = {}): StoredRule {
  return {
    id,
    name: `rule ${id}`,
    domain: 'default',
    condition_dsl: { type: 'condition', field: 'amount', op: '>', value: id * 10 },
    action: `act${id}`,
    priority: 0,
    enabled: true,
    tags: [],
    version: 1,
    created_at: stamp,
    updated_at: stamp,
    ...overrides,
  };
}

/** The two reads the catalog makes, over an array the test changes. */
class RulesStub {
  rules: StoredRule[] = [];
  current = 0;
  reads = 0;
  failNext = false;
  async snapshot(): Promise<{ revision: number; rules: StoredRule[] }> {
    if (this.failNext) {
      this.failNext = false;
      throw new Error('database down');
    }
    this.reads += 1;
    return { revision: this.current, rules: [...this.rules] };
  }
  change(rules: StoredRule[]): number {
    this.rules = rules;
    this.current += 1;
    return this.current;
  }
}

describe('toRuleInput', () => {
  it('drops storage fields and a null description', () => {
    const input: RuleInput = toRuleInput({ ...stored(1), description: null as unknown as string });
    expect(input).toEqual({
      id: 1,
      name: 'rule 1',
      domain: 'default',
      condition_dsl: stored(1).condition_dsl,
      action: 'act1',
      priority: 0,
      enabled: true,
      tags: [],
    });
  });
});

describe('RuleCatalog', () => {
  it('compiles the stored rules at the store revision on open', async () => {
    const stub = new RulesStub();
    stub.change([stored(1), stored(2)]);
    const catalog = await RuleCatalog.open({ rules: stub });
    expect(catalog.revision).toBe(1);
    expect(catalog.engine.size).toBe(2);
    expect(catalog.engine.evaluate({ amount: 15 }).fired_rules).toEqual([1]);
  });

  it('opens on an empty store at revision 0', async () => {
    const catalog = await RuleCatalog.open({ rules: new RulesStub() });
    expect(catalog.revision).toBe(0);
    expect(catalog.engine.size).toBe(0);
  });

  it('reloads to a newer revision, and skips a reload to one already reached', async () => {
    const stub = new RulesStub();
    const catalog = await RuleCatalog.open({ rules: stub });
    const revision = stub.change([stored(1)]);
    await catalog.reload(revision);
    expect(catalog.revision).toBe(revision);
    expect(catalog.engine.size).toBe(1);
    const reads = stub.reads;
    await catalog.reload(revision);
    await catalog.reload(revision - 1);
    expect(stub.reads).toBe(reads);
  });

  it('reloads to the latest revision when none is named', async () => {
    const stub = new RulesStub();
    const catalog = await RuleCatalog.open({ rules: stub });
    stub.change([stored(1)]);
    stub.change([stored(1), stored(2)]);
    await catalog.reload();
    expect(catalog.revision).toBe(2);
    expect(catalog.engine.size).toBe(2);
  });

  it('keeps the engine it has when a reload fails, and recovers on the next', async () => {
    const stub = new RulesStub();
    const catalog = await RuleCatalog.open({ rules: stub });
    const revision = stub.change([stored(1)]);
    stub.failNext = true;
    await expect(catalog.reload(revision)).rejects.toThrow('database down');
    expect(catalog.revision).toBe(0);
    await catalog.reload(revision);
    expect(catalog.revision).toBe(revision);
  });

  it('runs overlapping reloads one after another and ends at the highest revision', async () => {
    const stub = new RulesStub();
    const catalog = await RuleCatalog.open({ rules: stub });
    stub.change([stored(1)]);
    const second = stub.change([stored(1), stored(2)]);
    await Promise.all([catalog.reload(1), catalog.reload(second), catalog.reload(1)]);
    expect(catalog.revision).toBe(second);
    expect(catalog.engine.size).toBe(2);
  });

  it('tells listeners about a local change after reloading, and stops when unsubscribed', async () => {
    const stub = new RulesStub();
    const catalog = await RuleCatalog.open({ rules: stub });
    const seen: [RuleChange, number][] = [];
    const unsubscribe = catalog.onChange((change) => seen.push([change, catalog.revision]));
    const revision = stub.change([stored(1)]);
    await catalog.changed({ revision, rule_id: 1, change: 'create' });
    expect(seen).toHaveLength(1);
    expect(seen[0]![0]).toMatchObject({ revision, rule_id: 1, change: 'create' });
    expect(Number.isNaN(Date.parse(seen[0]![0].at))).toBe(false);
    expect(seen[0]![1]).toBe(revision);
    unsubscribe();
    await catalog.changed({ revision: stub.change([]), rule_id: 1, change: 'delete' });
    expect(seen).toHaveLength(1);
  });

  it('answers a committed change even when the reload fails, reports it and catches up in the background', async () => {
    const stub = new RulesStub();
    const errors: unknown[] = [];
    const catalog = await RuleCatalog.open({ rules: stub, onReloadError: (error) => errors.push(error) });
    const seen: number[] = [];
    catalog.onChange((change) => seen.push(change.revision));
    const revision = stub.change([stored(1)]);
    stub.failNext = true;
    // Failing here would have the caller make the stored change a second time.
    await expect(catalog.changed({ revision, rule_id: 1, change: 'create' })).resolves.toBeUndefined();
    expect(seen).toEqual([revision]);
    expect(errors.map((error) => (error as Error).message)).toEqual(['database down']);
    await vi.waitFor(() => expect(catalog.revision).toBe(revision), { timeout: 5_000 });
    expect(catalog.engine.size).toBe(1);
  });

  it('still tells the other listeners when one throws', async () => {
    const errors: unknown[] = [];
    const catalog = await RuleCatalog.open({ rules: new RulesStub(), onListenerError: (error) => errors.push(error) });
    const seen: number[] = [];
    catalog.onChange(() => {
      throw new Error('listener broke');
    });
    catalog.onChange((change) => seen.push(change.revision));
    await catalog.changed({ revision: 0, rule_id: null, change: 'reload' });
    expect(seen).toEqual([0]);
    expect(errors).toHaveLength(1);
  });
});
