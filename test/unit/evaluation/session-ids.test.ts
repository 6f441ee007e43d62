import { describe, expect, it } from 'vitest';
import { RuleCatalog } from '../../../src/evaluation/rule-catalog.ts';
import { idPart, SessionEvaluator, streamSessionId } from '../../../src/evaluation/session-evaluator.ts';
import { MemorySessionStore } from '../../../src/sessions/memory-session-store.ts';

const STORE_ID = /^[A-Za-z0-9._:-]{1,200}$/;

/** A session use case over no rules and the in-process store; `options` overrides any of its settings. */
async function evaluatorOverNoRules(options: Partial<ConstructorParameters<typeof SessionEvaluator>[0]> = {}) {
  const catalog = await RuleCatalog.open({ rules: { snapshot: async () => ({ revision: 1, rules: [] }) } });
  const sessions = new MemorySessionStore();
  const evaluator = new SessionEvaluator({
    catalog,
    rulesets: { get: async () => undefined },
    sessions,
    executions: { record: () => undefined },
    maxFacts: 10,
    ...options,
  });
  return { evaluator, sessions };
}

describe('stream session ids', () => {
  it('keep plain domains and keys readable', () => {
    expect(streamSessionId('auth', 'user-42')).toBe('stream:auth:user-42');
    expect(streamSessionId('payments.eu', 'acct_7.x')).toBe('stream:payments.eu:acct_7.x');
  });

  it('encode anything else reversibly, so different keys never share a session', () => {
    const keys = ['a:b', 'a b', '.hidden', '', 'ü', '{tag}', 'x'.repeat(80), 'x'.repeat(81)];
    const ids = keys.map((key) => streamSessionId('auth', key));
    expect(new Set(ids).size).toBe(keys.length);
    for (const id of ids) expect(id).toMatch(STORE_ID);
    expect(idPart('a:b')).toBe(`.${Buffer.from('a:b').toString('base64url')}`);
    expect(idPart('x'.repeat(80))).toBe('x'.repeat(80));
    expect(idPart('x'.repeat(81)).startsWith('..')).toBe(true);
  });

  it('hash very long keys and domains so the id stays within the store limit', () => {
    const id = streamSessionId('d'.repeat(100), 'k'.repeat(10_000));
    expect(id).toMatch(STORE_ID);
    expect(id.split(':')[2]?.startsWith('..')).toBe(true);
    expect(streamSessionId('d'.repeat(100), 'k'.repeat(10_001))).not.toBe(id);
  });
});

describe('session ids no session can have', () => {
  it('answer SESSION_NOT_FOUND, whatever the call, as an unknown session does', async () => {
    const { evaluator, sessions } = await evaluatorOverNoRules();
    try {
      // Outside the store's alphabet; a domain part that is not what any stream writes ('.!!' decodes to other text).
      for (const id of [
        'stream:{x}:y',
        'stream:.!!:y',
        `stream:auth:${'k'.repeat(300)}`,
        'stream:.YXV0aA==:y',
        'stream:..:y',
        'stream:..x:y',
      ]) {
        await expect(evaluator.addFact(id, 'f-1', {}), id).rejects.toMatchObject({ code: 'SESSION_NOT_FOUND' });
      }
      // A hashed domain part cannot be read back: that session cannot be served here, and says so.
      await expect(evaluator.addFact(`stream:..${'a'.repeat(43)}:y`, 'f-1', {})).rejects.toMatchObject({
        code: 'VALIDATION_ERROR',
        message: expect.stringContaining('domain name is too long'),
      });
    } finally {
      await sessions.close();
    }
  });
});

describe('session writes and execution records', () => {
  it('records each write unless told not to (KAFKA_RECORD_EXECUTIONS=false)', async () => {
    const recorded: string[] = [];
    const { evaluator, sessions } = await evaluatorOverNoRules({
      executions: { record: (execution) => void recorded.push(execution.execution_id) },
    });
    try {
      const first = await evaluator.addFactToImplicitSession('k', 'auth', 'f-1', {});
      await evaluator.addFactToImplicitSession('k', 'auth', 'f-2', {}, { record: false });
      await evaluator.addFact('stream:auth:k', 'f-3', {}, { record: false });
      const last = await evaluator.addFact('stream:auth:k', 'f-4', {});
      expect(recorded).toEqual([first.execution_id, last.execution_id]);
    } finally {
      await sessions.close();
    }
  });
});

describe('a stream fact larger than any session may hold', () => {
  it('is refused SESSION_FULL naming the allowance, and makes no session for its key', async () => {
    const { evaluator, sessions } = await evaluatorOverNoRules({ maxBytes: 1_024 });
    try {
      await expect(evaluator.addFactToImplicitSession('w', 'auth', 'f-1', { pad: 'x'.repeat(1_500) })).rejects.toMatchObject({
        code: 'SESSION_FULL',
        message: 'The fact is more than the 1024 characters of fact JSON a session may hold (RULES_SESSION_MAX_BYTES); send a smaller one.',
      });
      expect(await sessions.get('stream:auth:w')).toBeUndefined();
      // One that fits makes the session as ever.
      await evaluator.addFactToImplicitSession('w', 'auth', 'f-2', { pad: 'x' });
      expect((await sessions.get('stream:auth:w'))?.factCount).toBe(1);
    } finally {
      await sessions.close();
    }
  });
});

describe('sessions of domains without accumulators', () => {
  it('share one empty accumulator list, so naming endless domains (stream:<domain>:<key>) keeps nothing per domain', async () => {
    const catalog = await RuleCatalog.open({ rules: { snapshot: async () => ({ revision: 1, rules: [] }) } });
    const sessions = new MemorySessionStore();
    const seen: (readonly unknown[])[] = [];
    const recording = Object.assign(Object.create(sessions) as MemorySessionStore, {
      addFact: (id: string, input: Parameters<MemorySessionStore['addFact']>[1]) => {
        seen.push(input.specs);
        return sessions.addFact(id, input);
      },
    });
    const evaluator = new SessionEvaluator({
      catalog,
      rulesets: { get: async () => undefined },
      sessions: recording,
      executions: { record: () => undefined },
      maxFacts: 10,
    });
    try {
      for (const domain of ['d1', 'd2', 'd3']) {
        await expect(evaluator.addFact(`stream:${domain}:k`, 'f', {})).rejects.toMatchObject({ code: 'SESSION_NOT_FOUND' });
      }
      expect(seen).toHaveLength(3);
      expect(seen[0]).toEqual([]);
      expect(seen[1]).toBe(seen[0]);
      expect(seen[2]).toBe(seen[0]);
    } finally {
      await sessions.close();
    }
  });
});
