// PGlite persisted in a data directory keeps rules, history, audit and executions across a close and reopen.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../../src/store/open-store.ts';
import type { ExecutionRecord } from '../../../src/store/types.ts';
import { createTempDataDir } from '../../helpers/databases.ts';

describe('PGlite in a data directory', () => {
  let dataDir: Awaited<ReturnType<typeof createTempDataDir>>;
  beforeAll(async () => {
    dataDir = await createTempDataDir();
  });
  afterAll(async () => {
    await dataDir?.remove();
  });

  it('creates the directory and keeps everything across a reopen', async () => {
    const path = `${dataDir.path}/nested/pgdata`;
    const first = await openStore({ dataDir: path, executionFlushMs: 60_000 });
    const { value: rule } = await first.rules.create({ name: 'kept', condition_dsl: { type: 'exists', field: 'a' }, action: 'x' }, 'alice');
    await first.rules.update(rule.id, { priority: 4 }, 'bob');
    const { value: ruleset } = await first.rulesets.create({ name: 'main', domain: 'default' }, 'alice');
    const execution: ExecutionRecord = {
      execution_id: '018f3a2e-9c00-7000-8000-000000000001',
      source: 'kafka',
      domain: null,
      facts: { a: 1 },
      fired_rules: [rule.id],
      actions: ['x'],
      latency_ms: 2.5,
      revision: 3,
      created_at: '2024-05-01T10:00:00.000Z',
    };
    // Recorded but not yet written: close() must flush it.
    first.executions.record(execution);
    await first.close();
    expect(await first.ping()).toBe(false);

    const second = await openStore({ dataDir: path });
    try {
      expect(await second.ping()).toBe(true);
      expect(await second.rules.get(rule.id)).toMatchObject({ name: 'kept', priority: 4, version: 2 });
      expect((await second.rules.versions(rule.id))?.map((version) => version.actor)).toEqual(['alice', 'bob']);
      expect(await second.rulesets.get(ruleset.id)).toEqual(ruleset);
      expect(await second.rules.revision()).toBe(3);
      expect(await second.executions.get(execution.execution_id)).toEqual(execution);
      expect(await second.audit.verify()).toEqual({ valid: true, entries: 3 });
    } finally {
      await second.close();
    }
  });
});
