// Two instances whose rules differ for a moment (one heard of a change first) write the same session in Redis.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RuleCatalog } from '../../../src/evaluation/rule-catalog.ts';
import { SessionEvaluator } from '../../../src/evaluation/session-evaluator.ts';
import { openRedisSessionStore, type RedisSessionStore } from '../../../src/sessions/redis-session-store.ts';
import type { StoredRule } from '../../../src/store/types.ts';

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const DOMAIN = 'logins';
const countAtLeast = (id: number, threshold: number): StoredRule => ({
  id,
  name: `at least ${threshold}`,
  domain: DOMAIN,
  action: `seen-${threshold}`,
  priority: 0,
  enabled: true,
  version: 1,
  created_at: '2026-01-01T00:00:00.000Z',
  updated_at: '2026-01-01T00:00:00.000Z',
  condition_dsl: {
    type: 'accumulate',
    function: 'count',
    where: { type: 'condition', field: 'type', op: '==', value: 'f' },
    op: '>=',
    value: threshold,
  },
});

describe('session writes from instances holding different rules revisions', () => {
  const prefix = `test:${randomUUID()}:`;
  /** The rules store both instances load from: revision 1 has no rule, revision 2 two rules over a new count. */
  let rules = { revision: 1, rules: [] as StoredRule[] };
  const source = { snapshot: async () => rules };
  const stores: RedisSessionStore[] = [];
  let admin: Redis;

  beforeAll(async () => {
    admin = new Redis(url);
  });
  afterAll(async () => {
    for (const store of stores) await store.close();
    let cursor = '0';
    do {
      const [next, keys] = await admin.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1_000);
      cursor = next;
      if (keys.length > 0) await admin.del(...keys);
    } while (cursor !== '0');
    admin.disconnect();
  });

  async function instance(rulesSource = source): Promise<{ catalog: RuleCatalog; sessions: SessionEvaluator }> {
    const catalog = await RuleCatalog.open({ rules: rulesSource });
    const store = await openRedisSessionStore({ url, keyPrefix: prefix });
    stores.push(store);
    const sessions = new SessionEvaluator({
      catalog,
      rulesets: { get: async (id) => ({ id, name: 'r', domain: DOMAIN, description: null, created_at: '', updated_at: '' }) },
      sessions: store,
      executions: { record: () => undefined },
      maxFacts: 100,
    });
    return { catalog, sessions };
  }

  it('brings the instance behind up to the newer rules before its write, so nothing is undone or left uncounted', async () => {
    const a = await instance();
    const b = await instance();
    const session = await a.sessions.create(1, 600);
    rules = { revision: 2, rules: [countAtLeast(1, 1), countAtLeast(2, 2)] };
    // A committed the change and holds it at once; B has not heard of it yet.
    await a.catalog.reload(2);
    expect(b.catalog.revision).toBe(1);

    const first = await a.sessions.addFact(session.id, 'e1', { type: 'f' });
    expect(first).toMatchObject({ revision: 2, fired_rules: [1], activated: [1], deactivated: [] });
    const second = await b.sessions.addFact(session.id, 'e2', { type: 'f' });
    // Evaluated under revision 2 on B too: rule 1 still holds, and e2 counts towards rule 2.
    expect(second).toMatchObject({ revision: 2, activated: [2], deactivated: [] });
    expect([...second.fired_rules].sort()).toEqual([1, 2]);
    expect(b.catalog.revision).toBe(2);
    const third = await a.sessions.addFact(session.id, 'e3', { type: 'f' });
    expect(third).toMatchObject({ revision: 2, activated: [], deactivated: [], fact_count: 3 });
  });

  it('writes a session ahead of a restored rules store without the check once it found so, not reading the rules again', async () => {
    let restored = { revision: 5, rules: [countAtLeast(1, 1)] };
    let snapshots = 0;
    const counted = {
      snapshot: async () => {
        snapshots += 1;
        return restored;
      },
    };
    const a = await instance(counted);
    const session = await a.sessions.create(1, 600);
    await a.sessions.addFact(session.id, 'e0', { type: 'f' });
    // The rules store comes back from a backup at revision 3: its rules are the newest there are.
    restored = { revision: 3, rules: [countAtLeast(1, 1), countAtLeast(2, 2)] };
    const b = await instance(counted);
    snapshots = 0;
    const concurrent = await Promise.all(Array.from({ length: 16 }, (_, i) => b.sessions.addFact(session.id, `c${i}`, { type: 'f' })));
    for (let i = 0; i < 24; i += 1) await b.sessions.addFact(session.id, `s${i}`, { type: 'f' });
    expect(concurrent.every((written) => written.revision === 3)).toBe(true);
    expect((await b.sessions.get(session.id)).fact_count).toBe(41);
    // At most one read of the rules per write refused before the session was known to be ahead, none after.
    expect(snapshots).toBeLessThanOrEqual(16);
  });

  it('still refuses an instance behind once the restored rules store moved on past the session, after a write went through', async () => {
    let current = { revision: 10, rules: [countAtLeast(1, 1)] };
    const moving = { snapshot: async () => current };
    const first = await instance(moving);
    const session = await first.sessions.create(1, 600);
    await first.sessions.addFact(session.id, 'e0', { type: 'f' });
    // Restored at 5: the instance opened on it writes the session ahead of it.
    current = { revision: 5, rules: [countAtLeast(1, 1)] };
    const a = await instance(moving);
    expect(await a.sessions.addFact(session.id, 'a1', { type: 'f' })).toMatchObject({ revision: 5, fired_rules: [1] });
    // The store moves on to 11, adding rule 2; an instance that heard of it writes the session first.
    current = { revision: 11, rules: [countAtLeast(1, 1), countAtLeast(2, 2)] };
    const b = await instance(moving);
    expect(await b.sessions.addFact(session.id, 'b1', { type: 'f' })).toMatchObject({ revision: 11, activated: [], deactivated: [] });
    // a has not heard of 11: its write is refused, it loads 11, and a2 counts for rule 2 beside b1.
    const behind = await a.sessions.addFact(session.id, 'a2', { type: 'f' });
    expect(behind).toMatchObject({ revision: 11, activated: [2], deactivated: [] });
    expect([...behind.fired_rules].sort()).toEqual([1, 2]);
  });
});
