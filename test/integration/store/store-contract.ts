// The contract every SQL store must keep, run against PGlite and against real PostgreSQL by the two test files beside it.
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ConditionNode } from '../../../src/contracts/condition-dsl.ts';
import { AppError } from '../../../src/errors.ts';
import { newExecutionId } from '../../../src/evaluation/execution-id.ts';
import { encodeBatch, findInBatches, insertBatch, MAX_RECORDS_PER_BATCH, storedExecutions } from '../../../src/store/execution-batches.ts';
import { createExecutionsRepository, type ExecutionWriterOptions, MAX_SPARE_BYTES } from '../../../src/store/executions-repository.ts';
import type { SqlStore } from '../../../src/store/open-store.ts';
import type { ExecutionRecord, RuleDraft, SerializedExecution } from '../../../src/store/types.ts';
import type { TestStore } from '../../helpers/databases.ts';

const amountOver = (limit: number): ConditionNode => ({ type: 'condition', field: 'amount', op: '>', value: limit });

function draft(overrides: Partial<RuleDraft> = {}): RuleDraft {
  return { name: `rule-${randomUUID()}`, domain: `domain-${randomUUID()}`, condition_dsl: amountOver(100), action: 'flag', ...overrides };
}

function execution(overrides: Partial<ExecutionRecord> = {}): ExecutionRecord {
  return {
    execution_id: randomUUID(),
    source: 'http',
    domain: 'payments',
    facts: { amount: 4200, user: { country: 'US', tags: ['new'] } },
    fired_rules: [3, 1],
    actions: ['review'],
    latency_ms: 0.125,
    revision: 7,
    created_at: new Date().toISOString(),
    ...overrides,
  };
}

async function rejection(promise: Promise<unknown>): Promise<AppError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  if (!(error instanceof AppError)) throw new Error(`expected an AppError, got ${String(error)}`);
  return error;
}

export function describeStoreContract(label: string, open: () => Promise<TestStore>): void {
  describe(`SQL store on ${label}`, () => {
    let opened: TestStore | undefined;
    let store: SqlStore;

    beforeAll(async () => {
      opened = await open();
      store = opened.store;
    });
    afterAll(async () => {
      await opened?.cleanup();
    });

    /** A separate executions writer on the same database, with its own options and collected errors. */
    async function domainRecords(domain: string): Promise<ExecutionRecord[]> {
      const found: ExecutionRecord[] = [];
      for await (const record of storedExecutions(store.db)) if (record.domain === domain) found.push(record);
      return found;
    }

    function writer(options: Partial<ExecutionWriterOptions> = {}) {
      const errors: unknown[] = [];
      const repository = createExecutionsRepository(store.db, {
        batchSize: 500,
        flushMs: 10,
        backlogWarning: 100_000,
        onError: (error) => errors.push(error),
        ...options,
      });
      return { repository, errors };
    }

    describe('rules', () => {
      it('reads the rules and their revision in one snapshot while changes commit around it', async () => {
        // Creates only, one revision each: in a consistent snapshot the rules added match the revisions added.
        const base = await store.rules.snapshot();
        let creating = true;
        const inconsistent: string[] = [];
        const watcher = (async () => {
          while (creating) {
            const { revision, rules } = await store.rules.snapshot();
            if (rules.length - base.rules.length !== revision - base.revision) {
              inconsistent.push(`revision ${revision} with ${rules.length - base.rules.length} new rules`);
            }
          }
        })();
        for (let round = 0; round < 10; round += 1) await Promise.all(Array.from({ length: 8 }, () => store.rules.create(draft(), 'a')));
        creating = false;
        await watcher;
        expect(inconsistent).toEqual([]);
        const last = await store.rules.snapshot();
        expect(last.revision - base.revision).toBe(80);
        expect(last.rules.length - base.rules.length).toBe(80);
      });

      it('creates a rule with defaults, version 1 and timestamps, and reads it back', async () => {
        const before = await store.rules.revision();
        const { value: rule, revision } = await store.rules.create(
          { name: 'big amount', condition_dsl: amountOver(5000), action: 'review' },
          'alice',
        );
        expect(rule).toEqual({
          id: expect.any(Number),
          name: 'big amount',
          domain: 'default',
          condition_dsl: amountOver(5000),
          action: 'review',
          priority: 0,
          enabled: true,
          tags: [],
          version: 1,
          created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
          updated_at: rule.created_at,
        });
        expect(revision).toBe(before + 1);
        expect(await store.rules.revision()).toBe(revision);
        expect(await store.rules.get(rule.id)).toEqual(rule);
      });

      it('keeps every given field, and leaves description out when there is none', async () => {
        const { value: described } = await store.rules.create(
          draft({ priority: 5, enabled: false, description: 'why it exists', tags: ['fraud', 'eu'] }),
          'alice',
        );
        expect(described).toMatchObject({ priority: 5, enabled: false, description: 'why it exists', tags: ['fraud', 'eu'] });
        const { value: bare } = await store.rules.create(draft({ description: null }), 'alice');
        expect(bare).not.toHaveProperty('description');
        expect(await store.rules.get(bare.id)).not.toHaveProperty('description');
      });

      it('answers undefined for a rule that does not exist, including ids no column can hold', async () => {
        for (const id of [999_999, 0, -1, 1.5, 2 ** 40]) {
          expect(await store.rules.get(id)).toBeUndefined();
          expect(await store.rules.versions(id)).toBeUndefined();
        }
      });

      it('replaces a rule wholesale: new version, same created_at, defaults for fields left out', async () => {
        const { value: original } = await store.rules.create(draft({ priority: 9, tags: ['a'], description: 'old' }), 'alice');
        const replacement = draft({ domain: original.domain, condition_dsl: amountOver(1) });
        const change = await store.rules.replace(original.id, replacement, 'bob');
        expect(change?.value).toEqual({
          ...original,
          name: replacement.name,
          condition_dsl: amountOver(1),
          priority: 0,
          tags: [],
          description: undefined,
          version: 2,
          updated_at: expect.any(String),
        });
        expect(change?.value).not.toHaveProperty('description');
        expect((change?.value.updated_at ?? '') >= original.updated_at).toBe(true);
        expect(change?.revision).toBe(await store.rules.revision());
        expect(await store.rules.get(original.id)).toEqual(change?.value);
      });

      it('updates only the fields a patch names, and clears description with null', async () => {
        const { value: original } = await store.rules.create(draft({ description: 'keep me', tags: ['x'] }), 'alice');
        const renamed = await store.rules.update(original.id, { action: 'block', enabled: false }, 'bob');
        expect(renamed?.value).toMatchObject({ ...original, action: 'block', enabled: false, version: 2, updated_at: expect.any(String) });
        const cleared = await store.rules.update(original.id, { description: null }, 'bob');
        expect(cleared?.value).not.toHaveProperty('description');
        expect(cleared?.value).toMatchObject({ action: 'block', tags: ['x'], version: 3 });
      });

      it('changes nothing, not even the revision, when replacing, updating or deleting a missing rule', async () => {
        const revision = await store.rules.revision();
        expect(await store.rules.replace(987_654, draft(), 'bob')).toBeUndefined();
        expect(await store.rules.update(987_654, { action: 'x' }, 'bob')).toBeUndefined();
        expect(await store.rules.delete(987_654, 'bob')).toBeUndefined();
        expect(await store.rules.revision()).toBe(revision);
        const audit = await store.audit.list({ entity_type: 'rule', entity_id: 987_654, limit: 10 });
        expect(audit.items).toEqual([]);
      });

      it('deletes a rule but keeps its history, ending with a delete version', async () => {
        const { value: rule } = await store.rules.create(draft(), 'alice');
        await store.rules.update(rule.id, { priority: 3 }, 'bob');
        const deleted = await store.rules.delete(rule.id, 'carol');
        expect(deleted).toEqual({ value: true, revision: await store.rules.revision() });
        expect(await store.rules.get(rule.id)).toBeUndefined();
        expect(await store.rules.delete(rule.id, 'carol')).toBeUndefined();
        expect((await store.rules.all()).map((r) => r.id)).not.toContain(rule.id);

        const versions = await store.rules.versions(rule.id);
        expect(versions?.map((v) => [v.version, v.change, v.actor, v.rule.version, v.rule.priority])).toEqual([
          [1, 'create', 'alice', 1, 0],
          [2, 'update', 'bob', 2, 3],
          [3, 'delete', 'carol', 3, 3],
        ]);
        expect(versions?.[0]?.rule).toEqual(rule);
        expect(versions?.[2]?.changed_at).toBe(versions?.[2]?.rule.updated_at);
      });

      it('refuses a second rule with the same name in a domain, but not in another domain', async () => {
        const first = draft();
        await store.rules.create(first, 'alice');
        const revision = await store.rules.revision();
        const conflict = await rejection(store.rules.create({ ...first, action: 'other' }, 'bob'));
        expect(conflict.code).toBe('CONFLICT');
        expect(conflict.message).toBe(`a rule named "${first.name}" already exists in domain "${first.domain}"`);
        expect(await store.rules.revision()).toBe(revision);
        await expect(store.rules.create({ ...first, domain: `${first.domain}-2` }, 'bob')).resolves.toBeDefined();
      });

      it('refuses renaming a rule, by replace or update, onto a name its domain already has', async () => {
        const taken = draft();
        await store.rules.create(taken, 'alice');
        const { value: other } = await store.rules.create(draft({ domain: taken.domain }), 'alice');
        const revision = await store.rules.revision();
        const byUpdate = await rejection(store.rules.update(other.id, { name: taken.name }, 'bob'));
        expect(byUpdate.code).toBe('CONFLICT');
        expect(byUpdate.message).toBe(`a rule named "${taken.name}" already exists in domain "${taken.domain}"`);
        const byReplace = await rejection(store.rules.replace(other.id, { ...taken, action: 'x' }, 'bob'));
        expect(byReplace.code).toBe('CONFLICT');
        expect(await store.rules.revision()).toBe(revision);
        expect(await store.rules.get(other.id)).toEqual(other);
        expect(await store.rules.versions(other.id)).toHaveLength(1);
      });

      it('lets exactly one of many concurrent creates of the same name win', async () => {
        const contested = draft();
        const results = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => store.rules.create(contested, `writer-${i}`)));
        const won = results.filter((r) => r.status === 'fulfilled');
        const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
        expect(won).toHaveLength(1);
        expect(lost).toHaveLength(7);
        for (const failure of lost) expect(failure.reason).toMatchObject({ code: 'CONFLICT' });
        const page = await store.rules.list({ domain: contested.domain, limit: 10 });
        expect(page.items).toHaveLength(1);
      });

      it('pages through a domain in id order with opaque cursors', async () => {
        const domain = `paged-${randomUUID()}`;
        const created: number[] = [];
        for (let i = 0; i < 7; i++) created.push((await store.rules.create(draft({ domain, name: `r${i}` }), 'alice')).value.id);

        const seen: number[] = [];
        const pageSizes: number[] = [];
        let cursor: string | undefined;
        do {
          const page = await store.rules.list({ domain, limit: 3, ...(cursor === undefined ? {} : { cursor }) });
          pageSizes.push(page.items.length);
          seen.push(...page.items.map((rule) => rule.id));
          cursor = page.next_cursor ?? undefined;
        } while (cursor !== undefined);
        expect(pageSizes).toEqual([3, 3, 1]);
        expect(seen).toEqual(created);

        const exact = await store.rules.list({ domain, limit: 7 });
        expect(exact.items).toHaveLength(7);
        expect(exact.next_cursor).toBeNull();
      });

      it('filters the list by enabled and by tag', async () => {
        const domain = `filtered-${randomUUID()}`;
        const on = (await store.rules.create(draft({ domain, tags: ['fraud', 'eu'] }), 'a')).value;
        const off = (await store.rules.create(draft({ domain, enabled: false, tags: ['fraud'] }), 'a')).value;
        const untagged = (await store.rules.create(draft({ domain }), 'a')).value;
        const ids = async (filter: { enabled?: boolean; tag?: string }) =>
          (await store.rules.list({ domain, limit: 50, ...filter })).items.map((rule) => rule.id);
        expect(await ids({})).toEqual([on.id, off.id, untagged.id]);
        expect(await ids({ enabled: true })).toEqual([on.id, untagged.id]);
        expect(await ids({ enabled: false })).toEqual([off.id]);
        expect(await ids({ tag: 'fraud' })).toEqual([on.id, off.id]);
        expect(await ids({ tag: 'eu', enabled: true })).toEqual([on.id]);
        expect(await ids({ tag: 'fra' })).toEqual([]);
      });

      it('returns every rule, enabled or not, from all()', async () => {
        const off = (await store.rules.create(draft({ enabled: false }), 'a')).value;
        const all = await store.rules.all();
        expect(all.find((rule) => rule.id === off.id)).toEqual(off);
        expect(all.map((rule) => rule.id)).toEqual([...all.map((rule) => rule.id)].sort((a, b) => a - b));
      });

      it('rejects a malformed cursor or limit with VALIDATION_ERROR', async () => {
        for (const cursor of [
          'not a cursor',
          '!!!',
          Buffer.from('abc').toString('base64url'),
          Buffer.from('0').toString('base64url'),
          '',
        ]) {
          const error = await rejection(store.rules.list({ limit: 5, cursor }));
          expect(error.code).toBe('VALIDATION_ERROR');
          expect(error.message).toMatch(/cursor is malformed/);
        }
        for (const limit of [0, -1, 1.5, 1_001, Number.NaN]) {
          const error = await rejection(store.rules.list({ limit }));
          expect(error.code).toBe('VALIDATION_ERROR');
          expect(error.message).toMatch(/limit must be an integer/);
        }
      });

      it('gives every change its own revision, even when changes run concurrently', async () => {
        const start = await store.rules.revision();
        const changes = await Promise.all(Array.from({ length: 6 }, () => store.rules.create(draft(), 'a')));
        const revisions = changes.map((change) => change.revision).sort((a, b) => a - b);
        expect(revisions).toEqual([1, 2, 3, 4, 5, 6].map((n) => start + n));
        expect(await store.rules.revision()).toBe(start + 6);
      });
    });

    describe('rulesets', () => {
      it('creates, reads, pages and bumps the revision', async () => {
        const before = await store.rules.revision();
        const { value: first, revision } = await store.rulesets.create({ name: `set-${randomUUID()}`, domain: 'payments' }, 'alice');
        expect(revision).toBe(before + 1);
        expect(first).toEqual({
          id: expect.any(Number),
          name: first.name,
          domain: 'payments',
          description: null,
          created_at: expect.any(String),
          updated_at: first.created_at,
        });
        expect(await store.rulesets.get(first.id)).toEqual(first);
        expect(await store.rulesets.get(123_456_789)).toBeUndefined();
        const { value: second } = await store.rulesets.create({ name: `set-${randomUUID()}`, domain: 'p', description: 'd' }, 'alice');
        expect(second.description).toBe('d');

        const all = await store.rulesets.list({ limit: 1_000 });
        expect(all.items.slice(-2)).toEqual([first, second]);
        expect(all.next_cursor).toBeNull();
        const firstPage = await store.rulesets.list({ limit: 1 });
        expect(firstPage.items).toEqual(all.items.slice(0, 1));
        const secondPage = await store.rulesets.list({ limit: 1, cursor: firstPage.next_cursor ?? '' });
        expect(secondPage.items).toEqual(all.items.slice(1, 2));
      });

      it('refuses a duplicate ruleset name with CONFLICT and a malformed cursor with VALIDATION_ERROR', async () => {
        const name = `set-${randomUUID()}`;
        await store.rulesets.create({ name, domain: 'a' }, 'alice');
        const conflict = await rejection(store.rulesets.create({ name, domain: 'b' }, 'bob'));
        expect(conflict.code).toBe('CONFLICT');
        expect(conflict.message).toBe(`a ruleset named "${name}" already exists`);
        expect((await rejection(store.rulesets.list({ limit: 5, cursor: 'zz' }))).code).toBe('VALIDATION_ERROR');
      });
    });

    describe('audit', () => {
      it('records create, update and delete with before and after, newest first', async () => {
        const { value: rule } = await store.rules.create(draft(), 'alice');
        const updated = await store.rules.update(rule.id, { priority: 2 }, 'bob');
        await store.rules.delete(rule.id, 'carol');
        const { items } = await store.audit.list({ entity_type: 'rule', entity_id: rule.id, limit: 10 });
        expect(items.map((entry) => [entry.action, entry.actor])).toEqual([
          ['delete', 'carol'],
          ['update', 'bob'],
          ['create', 'alice'],
        ]);
        expect(items[2]).toMatchObject({ before: null, after: rule, entity_type: 'rule', entity_id: rule.id, at: rule.created_at });
        expect(items[1]).toMatchObject({ before: rule, after: updated?.value });
        expect(items[0]).toMatchObject({ before: updated?.value, after: null });
        expect(items[0]?.prev_hash).toBe(items[1]?.hash);
        for (const entry of items) expect(entry.hash).toMatch(/^[0-9a-f]{64}$/);
      });

      it("stamps changes with the database's clock, in chain order, whatever this process's clock says", async () => {
        const before = await store.rules.create(draft(), 'alice');
        // This process's clock a year behind, as an instance with a wrong clock would be.
        vi.useFakeTimers({ toFake: ['Date'], now: Date.now() - 365 * 86_400_000 });
        let stamped: Awaited<ReturnType<typeof store.rules.create>>;
        try {
          stamped = await store.rules.create(draft(), 'bob');
        } finally {
          vi.useRealTimers();
        }
        expect(Date.parse(stamped.value.created_at)).toBeGreaterThanOrEqual(Date.parse(before.value.created_at));
        expect(Math.abs(Date.parse(stamped.value.created_at) - Date.now())).toBeLessThan(60_000);
        const { items } = await store.audit.list({ since: new Date(before.value.created_at), limit: 100 });
        expect(items.map((entry) => entry.entity_id)).toContain(stamped.value.id);
        expect((await store.audit.verify()).valid).toBe(true);
      });

      it('audits rulesets too', async () => {
        const { value: ruleset } = await store.rulesets.create({ name: `set-${randomUUID()}`, domain: 'd' }, 'dora');
        const { items } = await store.audit.list({ entity_type: 'ruleset', entity_id: ruleset.id, limit: 5 });
        expect(items).toEqual([expect.objectContaining({ action: 'create', actor: 'dora', before: null, after: ruleset })]);
      });

      it('filters by action and by time, and pages with cursors', async () => {
        const since = new Date();
        const { value: rule } = await store.rules.create(draft(), 'alice');
        for (let i = 0; i < 4; i++) await store.rules.update(rule.id, { priority: i }, 'bob');
        const until = new Date(Date.now() + 1);

        const updates = await store.audit.list({ entity_id: rule.id, entity_type: 'rule', action: 'update', limit: 10 });
        expect(updates.items).toHaveLength(4);
        expect(updates.items.map((entry) => (entry.after as { priority: number }).priority)).toEqual([3, 2, 1, 0]);

        const windowed = await store.audit.list({ since, until, limit: 100 });
        expect(windowed.items.filter((entry) => entry.entity_id === rule.id && entry.entity_type === 'rule')).toHaveLength(5);
        for (const entry of windowed.items) expect(entry.at >= since.toISOString() && entry.at < until.toISOString()).toBe(true);
        const future = await store.audit.list({ since: new Date(Date.now() + 60_000), limit: 10 });
        expect(future.items).toEqual([]);
        const past = await store.audit.list({ until: new Date('2000-01-01T00:00:00Z'), limit: 10 });
        expect(past.items).toEqual([]);

        const first = await store.audit.list({ entity_type: 'rule', entity_id: rule.id, limit: 2 });
        const second = await store.audit.list({ entity_type: 'rule', entity_id: rule.id, limit: 2, cursor: first.next_cursor ?? '' });
        const third = await store.audit.list({ entity_type: 'rule', entity_id: rule.id, limit: 2, cursor: second.next_cursor ?? '' });
        const ids = [...first.items, ...second.items, ...third.items].map((entry) => entry.id);
        expect(ids).toHaveLength(5);
        expect(ids).toEqual([...ids].sort((a, b) => b - a));
        expect(third.next_cursor).toBeNull();
      });

      it('rejects a malformed cursor, limit or date with VALIDATION_ERROR', async () => {
        expect((await rejection(store.audit.list({ limit: 5, cursor: 'MTIz=' }))).code).toBe('VALIDATION_ERROR');
        expect((await rejection(store.audit.list({ limit: 0 }))).code).toBe('VALIDATION_ERROR');
        const badDate = await rejection(store.audit.list({ limit: 5, since: new Date('nope') }));
        expect(badDate.code).toBe('VALIDATION_ERROR');
        expect(badDate.message).toBe('since must be a valid date');
      });

      it('keeps one unbroken chain under concurrent writers', async () => {
        await Promise.all([
          ...Array.from({ length: 10 }, (_, i) => store.rules.create(draft(), `w${i}`)),
          ...Array.from({ length: 3 }, (_, i) => store.rulesets.create({ name: `set-${randomUUID()}`, domain: 'd' }, `s${i}`)),
        ]);
        const result = await store.audit.verify();
        expect(result).toEqual({ valid: true, entries: expect.any(Number) });
        const rows = await store.db.selectFrom('audit_log').select(['prev_hash']).execute();
        expect(result.entries).toBe(rows.length);
        expect(new Set(rows.map((row) => row.prev_hash)).size).toBe(rows.length);
      });

      it('detects a tampered entry and names it', async () => {
        const { value: rule } = await store.rules.create(draft(), 'alice');
        await store.rules.update(rule.id, { priority: 1 }, 'bob');
        const [victim] = (await store.audit.list({ entity_type: 'rule', entity_id: rule.id, action: 'create', limit: 1 })).items;
        if (victim === undefined) throw new Error('no audit entry to tamper with');
        expect(await store.audit.verify()).toMatchObject({ valid: true });

        const forged = JSON.stringify({ ...rule, action: 'approve' });
        await sql`update audit_log set after = ${forged}::jsonb where id = ${victim.id}`.execute(store.db);
        try {
          expect(await store.audit.verify()).toMatchObject({ valid: false, first_invalid_id: victim.id });
        } finally {
          await sql`update audit_log set after = ${JSON.stringify(victim.after)}::jsonb where id = ${victim.id}`.execute(store.db);
        }
        expect(await store.audit.verify()).toMatchObject({ valid: true });

        await sql`update audit_log set actor = 'mallory' where id = ${victim.id}`.execute(store.db);
        try {
          expect(await store.audit.verify()).toMatchObject({ valid: false, first_invalid_id: victim.id });
        } finally {
          await sql`update audit_log set actor = ${victim.actor} where id = ${victim.id}`.execute(store.db);
        }
        expect(await store.audit.verify()).toMatchObject({ valid: true });
      });

      it('refuses to store an entry time finer than the milliseconds its hash covers', async () => {
        const { value: rule } = await store.rules.create(draft(), 'alice');
        const [entry] = (await store.audit.list({ entity_type: 'rule', entity_id: rule.id, limit: 1 })).items;
        if (entry === undefined) throw new Error('no audit entry');
        await expect(sql`update audit_log set at = at + interval '1 microsecond' where id = ${entry.id}`.execute(store.db)).rejects.toThrow(
          /audit_log_at_milliseconds/,
        );
        expect(await store.audit.verify()).toMatchObject({ valid: true });
      });

      it('detects a recomputed hash that breaks the link to the next entry', async () => {
        const { value: rule } = await store.rules.create(draft(), 'alice');
        await store.rules.update(rule.id, { priority: 1 }, 'bob');
        const [next, victim] = (await store.audit.list({ entity_type: 'rule', entity_id: rule.id, limit: 2 })).items;
        if (victim === undefined || next === undefined) throw new Error('expected two audit entries');
        await sql`update audit_log set hash = ${'f'.repeat(64)} where id = ${victim.id}`.execute(store.db);
        try {
          expect(await store.audit.verify()).toMatchObject({ valid: false, first_invalid_id: victim.id });
        } finally {
          await sql`update audit_log set hash = ${victim.hash} where id = ${victim.id}`.execute(store.db);
        }
        expect(await store.audit.verify()).toMatchObject({ valid: true });
      });
    });

    describe('executions', () => {
      it('finds a recorded execution at once, before and after it is written', async () => {
        const { repository } = writer({ flushMs: 60_000 });
        const recorded = execution();
        repository.record(recorded);
        expect(await repository.get(recorded.execution_id)).toEqual(recorded);
        expect(await findInBatches(store.db, recorded.execution_id)).toBeUndefined();

        expect(repository.pendingCount()).toBe(1);
        // Its JSON as the batch holds it: at least the facts' own.
        expect(repository.pendingBytes()).toBeGreaterThanOrEqual(JSON.stringify(recorded.facts).length);
        await repository.flush();
        expect(repository.pendingCount()).toBe(0);
        expect(repository.pendingBytes()).toBe(0);
        expect(await findInBatches(store.db, recorded.execution_id)).toEqual(recorded);
        await repository.close();
        const fresh = writer().repository;
        expect(await fresh.get(recorded.execution_id)).toEqual(recorded);
        await fresh.close();
        expect(await store.executions.get(recorded.execution_id)).toEqual(recorded);
        expect(await store.executions.get(randomUUID())).toBeUndefined();
        expect(await store.executions.get('not-a-uuid')).toBeUndefined();
      });

      it('finds a stored record among records whose facts mention its id, and in a batch stored without record ends', async () => {
        const { repository, errors } = writer({ flushMs: 60_000 });
        const mentioned = execution({ facts: { amount: 1 } });
        const mentioning = Array.from({ length: 3 }, (_, i) => execution({ facts: { i, see: mentioned.execution_id } }));
        for (const record of [mentioned, ...mentioning]) repository.record(record);
        await repository.flush();
        await repository.close();
        expect(errors).toEqual([]);
        expect(await findInBatches(store.db, mentioned.execution_id)).toEqual(mentioned);
        expect(await findInBatches(store.db, mentioning[2]!.execution_id)).toEqual(mentioning[2]);

        // As a batch written before record ends were kept (or moved over from the old table) is stored.
        const legacy = [execution({ facts: { legacy: true } }), execution({ facts: { legacy: 2 } })];
        const encoded = await encodeBatch(legacy);
        await sql`
          insert into execution_batches (id_keys, newest_at, record_count, records)
          values (int8range(${encoded.minKey}, ${encoded.maxKey}, '[]'), ${encoded.newestAt}, ${encoded.count}, ${encoded.records})
        `.execute(store.db);
        expect(await store.executions.get(legacy[1]!.execution_id)).toEqual(legacy[1]);
        expect(await store.executions.get(legacy[0]!.execution_id)).toEqual(legacy[0]);
      });

      it('stores batch records uncompressed by PostgreSQL, since they are compressed already', async () => {
        const { rows } = await sql<{ storage: string }>`
          select attstorage as storage from pg_attribute where attrelid = 'execution_batches'::regclass and attname = 'records'
        `.execute(store.db);
        // EXTERNAL: out of line when large, never compressed again.
        expect(rows).toEqual([{ storage: 'e' }]);
      });

      it('writes 10,000 records in batches of bounded size', async () => {
        const domain = `bulk-${randomUUID()}`;
        const fullBatches = async (): Promise<number> => {
          const { rows } = await sql<{ n: string | number }>`
            select count(*) as n from execution_batches where record_count = ${MAX_RECORDS_PER_BATCH}
          `.execute(store.db);
          return Number(rows[0]?.n);
        };
        const before = await fullBatches();
        const { repository, errors } = writer({ batchSize: 50_000, flushMs: 60_000 });
        const records = Array.from({ length: 10_000 }, (_, i) => execution({ domain, facts: { i }, fired_rules: [i] }));
        for (const record of records) repository.record(record);
        await repository.flush();
        await repository.close();
        expect(errors).toEqual([]);
        expect(await fullBatches()).toBe(before + 2);
        expect(await domainRecords(domain)).toHaveLength(10_000);
        expect(await store.executions.get(records[9_999]?.execution_id ?? '')).toEqual(records[9_999]);
        expect(await store.executions.get(records[0]?.execution_id ?? '')).toEqual(records[0]);
      });

      it('writes full batches while records keep arriving, leaving the rest for the timer or a flush', async () => {
        const domain = `steady-${randomUUID()}`;
        const { rows: last } = await sql<{ id: string | number | null }>`select max(batch_id) as id from execution_batches`.execute(
          store.db,
        );
        const after = Number(last[0]?.id ?? 0);
        const batchSizes = async (): Promise<number[]> => {
          const { rows } = await sql<{ n: number }>`
            select record_count as n from execution_batches where batch_id > ${after} order by batch_id
          `.execute(store.db);
          return rows.map((row) => Number(row.n));
        };
        // The timer is a minute away: only record()'s kicks write until the flush.
        const { repository, errors } = writer({ batchSize: 100, flushMs: 60_000 });
        const records = Array.from({ length: 1_050 }, (_, i) => execution({ domain, facts: { i } }));
        for (const record of records) {
          repository.record(record);
          // One record per turn of the event loop, so records keep arriving while a batch is being written.
          await new Promise((resolve) => setImmediate(resolve));
        }
        for (let waited = 0; repository.pendingCount() > 50 && waited < 10_000; waited += 10) {
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        expect(await batchSizes()).toEqual(Array.from({ length: 10 }, () => 100));
        expect(repository.pendingCount()).toBe(50);
        await repository.close();
        expect(errors).toEqual([]);
        expect(await batchSizes()).toEqual([...Array.from({ length: 10 }, () => 100), 50]);
        expect(await domainRecords(domain)).toHaveLength(1_050);
      });

      it('writes in the background through the store with the default batch size', async () => {
        const domain = `background-${randomUUID()}`;
        const records = Array.from({ length: 1_200 }, () => execution({ domain }));
        for (const record of records) store.executions.record(record);
        await store.executions.flush();
        expect((await domainRecords(domain)).map((record) => record.execution_id).sort()).toEqual(
          records.map((record) => record.execution_id).sort(),
        );
      });

      it("keeps the store's own pending batches through a failed write, and writes each record once when the database is back", async () => {
        // store.executions writes as the service does: on PGlite through its thread, on PostgreSQL through the pool.
        const domain = `outage-${randomUUID()}`;
        const records = Array.from({ length: 1_200 }, (_, i) => execution({ domain, facts: { i } }));
        await sql`alter table execution_batches rename to execution_batches_parked`.execute(store.db);
        try {
          for (const record of records) store.executions.record(record);
          await expect(store.executions.flush()).rejects.toMatchObject(missingTable('execution_batches'));
          expect(store.executions.pendingCount()).toBe(1_200);
          expect(await store.executions.get(records[0]!.execution_id)).toEqual(records[0]);
          expect(await store.executions.get(records[1_199]!.execution_id)).toEqual(records[1_199]);
        } finally {
          await sql`alter table execution_batches_parked rename to execution_batches`.execute(store.db);
        }
        await store.executions.flush();
        expect(store.executions.pendingCount()).toBe(0);
        const stored = await domainRecords(domain);
        expect(stored.map((record) => record.execution_id).sort()).toEqual(records.map((record) => record.execution_id).sort());
        expect(await store.executions.get(records[600]!.execution_id)).toEqual(records[600]);
      });

      it('reads back the latest record of an id recorded again after its first write', async () => {
        const first = execution({ fired_rules: [1] });
        store.executions.record(first);
        await store.executions.flush();
        const again = { ...first, fired_rules: [1, 2], actions: ['review', 'block'] };
        store.executions.record(again);
        await store.executions.flush();
        expect(await store.executions.get(first.execution_id)).toEqual(again);
      });

      it('keeps records through a failed write, reports it, and writes them once the database is back', async () => {
        const { repository, errors } = writer();
        const recorded = execution();
        await sql`alter table execution_batches rename to execution_batches_parked`.execute(store.db);
        try {
          repository.record(recorded);
          await expect(repository.flush()).rejects.toMatchObject(missingTable('execution_batches'));
          expect(await repository.get(recorded.execution_id)).toEqual(recorded);
          await vi.waitFor(() => expect(errors.length).toBeGreaterThan(0), { timeout: 10_000 });
        } finally {
          await sql`alter table execution_batches_parked rename to execution_batches`.execute(store.db);
        }
        await repository.flush();
        await repository.close();
        expect(await findInBatches(store.db, recorded.execution_id)).toEqual(recorded);
      });

      it('stores a batch once when its insert is retried after an answer that was lost (it had committed)', async () => {
        let lost = 1;
        const { repository } = writer({
          flushMs: 60_000,
          writeBatch: async (batch) => {
            await insertBatch(store.db, await batch.encode());
            if (lost-- > 0) throw new AppError('UNAVAILABLE', 'the database is unavailable');
          },
        });
        const recorded = execution();
        repository.record(recorded);
        await expect(repository.flush()).rejects.toMatchObject({ code: 'UNAVAILABLE' });
        await repository.flush();
        await repository.close();
        let copies = 0;
        for await (const stored of storedExecutions(store.db)) if (stored.execution_id === recorded.execution_id) copies += 1;
        expect(copies).toBe(1);
        expect(await findInBatches(store.db, recorded.execution_id)).toEqual(recorded);
      });

      it('keeps no buffer larger than MAX_SPARE_BYTES reserved once a huge record is written', async () => {
        const { repository } = writer({ flushMs: 60_000 });
        repository.record(execution({ facts: { note: 'x'.repeat(6 * 1024 * 1024) } }));
        await repository.flush();
        repository.record(execution());
        await repository.flush();
        expect(repository.reservedBytes()).toBeLessThan(6 * 1024 * 1024);
        expect(repository.reservedBytes()).toBeLessThanOrEqual(MAX_SPARE_BYTES + 64 * 1024);
        await repository.close();
      });

      it('keeps trying to write its pending records when closing while the database is away for a moment', async () => {
        let refusals = 2;
        const { repository, errors } = writer({
          flushMs: 60_000,
          writeBatch: async (batch) => {
            if (refusals > 0) {
              refusals -= 1;
              throw new AppError('UNAVAILABLE', 'the database is unavailable');
            }
            await insertBatch(store.db, await batch.encode());
          },
        });
        const recorded = execution();
        repository.record(recorded);
        await repository.close();
        expect(refusals).toBe(0);
        expect(errors.map((error) => (error as AppError).code)).toEqual(['UNAVAILABLE', 'UNAVAILABLE']);
        expect(await findInBatches(store.db, recorded.execution_id)).toEqual(recorded);
        // A failure that waiting cannot cure is not retried: close reports it at once.
        const broken = writer({ flushMs: 60_000, writeBatch: async () => Promise.reject(new Error('a bug')) });
        broken.repository.record(execution());
        broken.repository.record(execution());
        await expect(broken.repository.close()).rejects.toThrow('a bug');
        expect(broken.errors.map((error) => (error as Error).message)).toContain('2 pending executions could not be written and are lost');
      });

      it('stores any JSON the facts hold, and drops only a record that can never be stored, reporting it', async () => {
        const { repository, errors } = writer({ flushMs: 60_000 });
        const good = execution();
        // jsonb refuses a NUL character; the batch stores the JSON text, so such a fact is kept.
        const withNul = execution({ facts: { note: 'nul \u0000 inside', emoji: '\u{1F600}', lone: '\uD800' } });
        const circular: Record<string, unknown> = {};
        circular.self = circular;
        const cyclic = execution({ facts: circular });
        const big = execution({ facts: { n: 10n } });
        const badId = execution({ execution_id: 'not-a-uuid' });
        for (const record of [good, withNul, cyclic, big, badId]) repository.record(record);
        // Reported when recorded, before any write.
        expect(errors).toHaveLength(3);
        expect(repository.pendingCount()).toBe(2);
        await repository.flush();
        await repository.close();
        expect(errors.map((error) => (error as AppError).message)).toEqual([
          `execution ${cyclic.execution_id} cannot be stored and was dropped`,
          `execution ${big.execution_id} cannot be stored and was dropped`,
          'execution not-a-uuid cannot be stored and was dropped',
        ]);
        expect(await store.executions.get(good.execution_id)).toEqual(good);
        expect(await store.executions.get(withNul.execution_id)).toEqual(withNul);
        expect(await store.executions.get(cyclic.execution_id)).toBeUndefined();
      });

      it('keeps a record as it was when recorded, whatever the caller changes afterwards', async () => {
        const { repository } = writer({ flushMs: 60_000 });
        const facts = { amount: 10, tags: ['a'] };
        const recorded = execution({ facts });
        repository.record(recorded);
        facts.amount = 99;
        facts.tags.push('b');
        const expected = { ...recorded, facts: { amount: 10, tags: ['a'] } };
        expect(await repository.get(recorded.execution_id)).toEqual(expected);
        await repository.close();
        expect(await findInBatches(store.db, recorded.execution_id)).toEqual(expected);
      });

      it('stores an execution handed over as JSON texts, read back like any other, in one batch with both forms', async () => {
        const { repository, errors } = writer({ flushMs: 60_000 });
        const createdMs = Date.now();
        const id = newExecutionId(createdMs);
        const texts: SerializedExecution = {
          execution_id: id,
          source: 'http',
          domain: 'pay"ments',
          createdMs,
          // As a client sent it: spacing, escapes, a NUL and a key given twice (JSON.parse keeps the later one).
          requestJson: '{ "facts": {"amount": 1, "amount": 4200, "note": "line\\nbreak \\u0000 \\ud800"},\n  "domain": "pay\\"ments" }',
          outcomeJson: JSON.stringify({ execution_id: id, fired_rules: [3, 1], actions: ['review'], latency_ms: 0.125, revision: 7 }),
        };
        const expected = execution({
          execution_id: id,
          domain: 'pay"ments',
          facts: { amount: 4200, note: 'line\nbreak \u0000 \ud800' },
          created_at: new Date(createdMs).toISOString(),
        });
        const plain = execution();
        repository.record(texts);
        repository.record(plain);
        expect(await repository.get(id)).toEqual(expected);
        await repository.flush();
        expect(await findInBatches(store.db, id)).toEqual(expected);
        expect(await findInBatches(store.db, plain.execution_id)).toEqual(plain);
        await repository.close();
        expect(errors).toEqual([]);
        expect(await store.executions.get(id)).toEqual(expected);
      });

      it('drops an execution handed over as texts with a time no UUID v7 holds, and says why', async () => {
        const { repository, errors } = writer({ flushMs: 60_000 });
        const texts = (createdMs: number): SerializedExecution => ({
          execution_id: newExecutionId(Date.now()),
          source: 'http',
          domain: null,
          createdMs,
          requestJson: '{"facts":{}}',
          outcomeJson: '{}',
        });
        for (const createdMs of [-1, 1.5, 2 ** 48, Number.NaN]) repository.record(texts(createdMs));
        expect(repository.pendingCount()).toBe(0);
        expect(errors).toHaveLength(4);
        for (const error of errors) {
          expect(error).toMatchObject({ code: 'VALIDATION_ERROR', message: expect.stringMatching(/cannot be stored and was dropped/) });
          expect((error as AppError).cause).toMatchObject({ message: expect.stringMatching(/has no valid creation time/) });
        }
        await repository.close();
      });

      it('keeps accepting past the backlog warning, and warns once', async () => {
        const { repository, errors } = writer({ backlogWarning: 5, batchSize: 1_000, flushMs: 60_000 });
        const records = Array.from({ length: 8 }, () => execution());
        for (const record of records) repository.record(record);
        expect(errors).toHaveLength(1);
        expect(errors[0]).toMatchObject({ code: 'UNAVAILABLE', message: expect.stringMatching(/not keeping up/) });
        await repository.close();
        for (const record of records) expect(await store.executions.get(record.execution_id)).toEqual(record);
      });

      it('reports a record made after close instead of losing it silently', async () => {
        const { repository, errors } = writer();
        await repository.close();
        const late = execution();
        repository.record(late);
        expect(errors).toEqual([new Error(`execution ${late.execution_id} was recorded after the store was closed`)]);
        expect(await repository.get(late.execution_id)).toEqual(late);
      });

      it('deletes executions older than the retention cutoff', async () => {
        const old = [1, 2, 3].map((day) => execution({ created_at: `2001-01-0${day}T00:00:00.000Z` }));
        for (const record of old) store.executions.record(record);
        await store.executions.flush();
        const recent = execution({ created_at: '2001-06-01T00:00:00.000Z' });
        store.executions.record(recent);
        await store.executions.flush();
        expect(await store.executions.deleteOlderThan(new Date('2001-03-01T00:00:00Z'))).toBe(3);
        for (const record of old) expect(await store.executions.get(record.execution_id)).toBeUndefined();
        expect(await store.executions.get(recent.execution_id)).toEqual(recent);
        expect(await store.executions.deleteOlderThan(new Date('2001-03-01T00:00:00Z'))).toBe(0);
        const error = await rejection(store.executions.deleteOlderThan(new Date('garbage')));
        expect(error.code).toBe('VALIDATION_ERROR');
      });

      it('keeps a batch until its newest execution passes the cutoff', async () => {
        const older = execution({ created_at: '1990-01-01T00:00:00.000Z' });
        const newer = execution({ created_at: '1990-06-01T00:00:00.000Z' });
        store.executions.record(older);
        store.executions.record(newer);
        await store.executions.flush();
        expect(await store.executions.deleteOlderThan(new Date('1990-03-01T00:00:00Z'))).toBe(0);
        expect(await store.executions.get(older.execution_id)).toEqual(older);
        expect(await store.executions.deleteOlderThan(new Date('1990-07-01T00:00:00Z'))).toBe(2);
        expect(await store.executions.get(newer.execution_id)).toBeUndefined();
      });
    });

    it('answers ping while open', async () => {
      expect(await store.ping()).toBe(true);
    });
  });
}

/** A table gone from under the store: retryable, its name kept in the cause for the log. */
function missingTable(table: string) {
  return { code: 'UNAVAILABLE', cause: expect.objectContaining({ message: expect.stringContaining(table) }) };
}
