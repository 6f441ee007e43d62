import { describe, expect, it } from 'vitest';
import { AppError } from '../../../src/errors.ts';
import type { SessionEvaluation } from '../../../src/evaluation/session-evaluator.ts';
import { BatchProcessor } from '../../../src/kafka/batch-processor.ts';
import type { InputMessage, KafkaEvaluation } from '../../../src/kafka/result-message.ts';
import { type KafkaSessions, sessionRouter } from '../../../src/kafka/session-routing.ts';

const stateless = (): KafkaEvaluation => ({ execution_id: 'e', fired_rules: [], actions: [], latency_ms: 0, domain: null, revision: 1 });

const message = (offset: number, value: unknown, key: string | null = 'k'): InputMessage => ({
  key: key === null ? null : Buffer.from(key),
  value: Buffer.from(JSON.stringify(value)),
  offset: String(offset),
  headers: { 'correlation-id': `c-${offset}` },
});

const bodyOf = (record: { value: unknown }) => JSON.parse(String(record.value)) as Record<string, unknown>;

/** An in-memory stand-in for the session use case: counts facts per session, fires rule 1 from three facts on. */
class FakeSessions implements KafkaSessions {
  readonly applied: string[] = [];
  readonly facts = new Map<string, Set<string>>();
  /** Fact ids whose next write fails with this error (once). */
  readonly failOnce = new Map<string, Error>();
  /** Per session id, what a write waits for before applying, to shake out ordering (else one timer tick). */
  readonly holds = new Map<string, Promise<unknown>>();
  /** Actions of the fired rule 1 (long ones make a result too large to publish whole). */
  action = 'lock';
  /** Called with each write applied, as `session/fact`. */
  onApplied: (entry: string) => void = () => undefined;
  readonly known = new Set<string>(['s-a', 's-b']);

  async addFact(sessionId: string, factId: string, event: Record<string, unknown>): Promise<SessionEvaluation> {
    if (!this.known.has(sessionId)) throw new AppError('SESSION_NOT_FOUND', `Session '${sessionId}' does not exist or has expired.`);
    return this.#apply(sessionId, factId, event);
  }

  async addFactToImplicitSession(key: string, domain: string, factId: string, event: Record<string, unknown>): Promise<SessionEvaluation> {
    return this.#apply(`stream:${domain}:${key}`, factId, event);
  }

  async #apply(sessionId: string, factId: string, _event: Record<string, unknown>): Promise<SessionEvaluation> {
    await (this.holds.get(sessionId) ?? new Promise((resolve) => setTimeout(resolve, 0)));
    const failure = this.failOnce.get(factId);
    if (failure !== undefined) {
      this.failOnce.delete(factId);
      throw failure;
    }
    const facts = this.facts.get(sessionId) ?? new Set<string>();
    const before = facts.size >= 3;
    facts.add(factId);
    this.facts.set(sessionId, facts);
    this.applied.push(`${sessionId}/${factId}`);
    this.onApplied(`${sessionId}/${factId}`);
    const after = facts.size >= 3;
    return {
      session_id: sessionId,
      fact_id: factId,
      execution_id: `x-${this.applied.length}`,
      fired_rules: after ? [1] : [],
      actions: after ? [this.action] : [],
      latency_ms: 1,
      activated: after && !before ? [1] : [],
      deactivated: before && !after ? [1] : [],
      fact_count: facts.size,
      revision: 3,
      replaced: false,
      duplicate: false,
    };
  }
}

function processorFor(sessions: FakeSessions, streaming = false): BatchProcessor {
  return new BatchProcessor({
    decoder: undefined,
    evaluate: stateless,
    sessions: sessionRouter(sessions, streaming),
    maxUnexpectedAttempts: 3,
  });
}

/** Streaming over sessions whose rule 1 has a 2,000-character action, results limited to 1,000 bytes. */
function streamingWithLongActions(): { sessions: FakeSessions; processor: BatchProcessor } {
  const sessions = new FakeSessions();
  sessions.action = 'a'.repeat(2_000);
  const processor = new BatchProcessor({
    decoder: undefined,
    evaluate: stateless,
    sessions: sessionRouter(sessions, true),
    maxUnexpectedAttempts: 3,
    maxResultBytes: 1_000,
  });
  return { sessions, processor };
}

describe('BatchProcessor with sessions', () => {
  it('publishes a session result per session fact, carrying key and headers, beside stateless results', async () => {
    const sessions = new FakeSessions();
    const run = await processorFor(sessions).process('facts', 0, [
      message(0, { facts: { n: 1 }, session_id: 's-a', fact_id: 'f1' }, 'user-1'),
      message(1, { facts: { n: 2 } }),
      message(2, { facts: { n: 3 }, session_id: 's-a' }, 'user-1'),
    ]);
    expect(run.deadLetters).toEqual([]);
    expect(run.lastHandledOffset).toBe('2');
    expect(run.results.map(bodyOf)).toEqual([
      {
        session_id: 's-a',
        fact_id: 'f1',
        execution_id: 'x-1',
        fired_rules: [],
        actions: [],
        activated: [],
        deactivated: [],
        fact_count: 1,
        replaced: false,
        duplicate: false,
        latency_ms: 1,
        revision: 3,
        source: { topic: 'facts', partition: 0, offset: '0' },
      },
      expect.objectContaining({ execution_id: 'e', source: { topic: 'facts', partition: 0, offset: '1' } }),
      expect.objectContaining({ session_id: 's-a', fact_id: 'kafka:facts:0:2', fact_count: 2 }),
    ]);
    expect(String(run.results[0]!.key)).toBe('user-1');
    expect(String(run.results[0]!.headers?.['correlation-id'])).toBe('c-0');
  });

  it('applies writes to one session in offset order even when they are slow, and other sessions alongside', async () => {
    const sessions = new FakeSessions();
    // s-a's writes are held until s-b's last one is applied: were s-b queued behind s-a, the run would never finish.
    sessions.holds.set(
      's-a',
      new Promise((resolve) => {
        sessions.onApplied = (entry) => {
          if (entry === 's-b/f5') resolve(undefined);
        };
      }),
    );
    const input = [0, 1, 2, 3, 4, 5].map((offset) =>
      message(offset, { facts: {}, session_id: offset % 2 === 0 ? 's-a' : 's-b', fact_id: `f${offset}` }),
    );
    const run = await processorFor(sessions).process('facts', 0, input);
    expect(run.results).toHaveLength(6);
    expect(sessions.applied.filter((entry) => entry.startsWith('s-a/'))).toEqual(['s-a/f0', 's-a/f2', 's-a/f4']);
    expect(sessions.applied.filter((entry) => entry.startsWith('s-b/'))).toEqual(['s-b/f1', 's-b/f3', 's-b/f5']);
    // s-b did not wait for the slow s-a.
    expect(sessions.applied.slice(0, 3)).toEqual(['s-b/f1', 's-b/f3', 's-b/f5']);
  });

  it('dead-letters an unknown session with SESSION_NOT_FOUND and answers the messages around it', async () => {
    const sessions = new FakeSessions();
    const run = await processorFor(sessions).process('facts', 1, [
      message(0, { facts: {}, session_id: 's-a' }),
      message(1, { facts: {}, session_id: 'gone' }),
      message(2, { facts: {}, session_id: 's-a' }),
    ]);
    expect(run.results.map((record) => (bodyOf(record).source as { offset: string }).offset)).toEqual(['0', '2']);
    expect(run.deadLetters).toHaveLength(1);
    expect(String(run.deadLetters[0]!.headers?.error_code)).toBe('SESSION_NOT_FOUND');
    expect(String(run.deadLetters[0]!.headers?.error_detail)).toBe("Session 'gone' does not exist or has expired.");
    expect(run.lastHandledOffset).toBe('2');
  });

  it('holds back later writes to a session whose write must be retried, and reuses writes already applied on redelivery', async () => {
    const sessions = new FakeSessions();
    sessions.failOnce.set('a2', new AppError('UNAVAILABLE', 'Session store (Redis) is unavailable; try again later.'));
    const processor = processorFor(sessions);
    const input = [
      message(0, { facts: {}, session_id: 's-a', fact_id: 'a1' }),
      message(1, { facts: {}, session_id: 's-a', fact_id: 'a2' }),
      message(2, { facts: {}, session_id: 's-b', fact_id: 'b1' }),
      message(3, { facts: {}, session_id: 's-a', fact_id: 'a3' }),
    ];
    const first = await processor.process('facts', 0, input);
    expect(first.retry).toMatchObject({ offset: '1', attempt: 1 });
    expect(first.lastHandledOffset).toBe('0');
    expect(first.results).toHaveLength(1);
    expect(first.deadLetters).toEqual([]);
    // a3 waited for a2; b1 (another session) went ahead and is kept for the redelivery.
    expect(sessions.applied).toEqual(['s-a/a1', 's-b/b1']);
    processor.delivered('facts', 0, first.lastHandledOffset!);

    const second = await processor.process('facts', 0, input.slice(1));
    expect(second.retry).toBeUndefined();
    expect(second.lastHandledOffset).toBe('3');
    expect(sessions.applied).toEqual(['s-a/a1', 's-b/b1', 's-a/a2', 's-a/a3']);
    expect(second.results.map((record) => bodyOf(record).fact_id)).toEqual(['a2', 'b1', 'a3']);
    // The third fact of s-a activates rule 1 exactly once.
    expect(second.results.map((record) => bodyOf(record).activated)).toEqual([[], [], [1]]);
  });

  it('evaluates a stateless fact past a write to retry once, and publishes that evaluation on redelivery', async () => {
    const sessions = new FakeSessions();
    sessions.failOnce.set('a1', new AppError('UNAVAILABLE', 'Session store (Redis) is unavailable; try again later.'));
    let evaluations = 0;
    const processor = new BatchProcessor({
      decoder: undefined,
      evaluate: () => ({ ...stateless(), execution_id: `e-${++evaluations}` }),
      sessions: sessionRouter(sessions, false),
      maxUnexpectedAttempts: 3,
    });
    const input = [
      message(0, { facts: { n: 0 } }),
      message(1, { facts: {}, session_id: 's-a', fact_id: 'a1' }),
      message(2, { facts: { n: 2 } }),
      message(3, { facts: { n: 3 } }),
    ];
    const first = await processor.process('facts', 0, input);
    expect(first.retry).toMatchObject({ offset: '1' });
    expect(first.results.map((record) => bodyOf(record).execution_id)).toEqual(['e-1']);
    processor.delivered('facts', 0, first.lastHandledOffset!);
    for (let attempt = 0; attempt < 3; attempt += 1) {
      sessions.failOnce.set('a1', new AppError('UNAVAILABLE', 'Session store (Redis) is unavailable; try again later.'));
      expect((await processor.process('facts', 0, input.slice(1))).retry).toMatchObject({ offset: '1' });
    }
    const last = await processor.process('facts', 0, input.slice(1));
    expect(last.retry).toBeUndefined();
    // Offsets 2 and 3 were evaluated (and recorded) once, before the first retry; their results carry those ids.
    expect(evaluations).toBe(3);
    expect(last.results.map((record) => bodyOf(record).execution_id)).toEqual(['x-1', 'e-2', 'e-3']);
    processor.delivered('facts', 0, last.lastHandledOffset!);
    // Delivered, they are forgotten: the same offsets fetched again are new work.
    await processor.process('facts', 0, input.slice(2));
    expect(evaluations).toBe(5);
  });

  it('holds back every later session write behind a message that must be decoded again, since its session is unknown', async () => {
    const sessions = new FakeSessions();
    let registryUp = false;
    const processor = new BatchProcessor({
      decoder: {
        decode: async () => {
          if (!registryUp) throw new AppError('UNAVAILABLE', 'schema registry could not be read for schema id 43: 503');
          return { facts: { n: 1 }, domain: 'auth' };
        },
      },
      evaluate: stateless,
      sessions: sessionRouter(sessions, true),
      maxUnexpectedAttempts: 3,
    });
    // Offset 10 is registry-framed, offset 11 plain JSON: both for the key's implicit session.
    const framed: InputMessage = { key: Buffer.from('u'), value: Buffer.from([0, 0, 0, 0, 43, 1]), offset: '10', headers: {} };
    const input = [framed, message(11, { facts: { n: 2 }, domain: 'auth' }, 'u')];
    const first = await processor.process('facts', 0, input);
    expect(first.retry).toMatchObject({ offset: '10' });
    expect(sessions.applied).toEqual([]);
    registryUp = true;
    const second = await processor.process('facts', 0, input);
    expect(second.retry).toBeUndefined();
    expect(sessions.applied).toEqual(['stream:auth:u/kafka:facts:0:10', 'stream:auth:u/kafka:facts:0:11']);
  });

  it('dead-letters a redelivered write again when later writes to its session went ahead of it', async () => {
    const sessions = new FakeSessions();
    sessions.failOnce.set('b1', new AppError('UNAVAILABLE', 'Session store (Redis) is unavailable; try again later.'));
    sessions.failOnce.set('a1', new AppError('SESSION_FULL', "Session 's-a' holds 2 facts, its limit."));
    const processor = processorFor(sessions);
    const input = [
      message(0, { facts: {}, session_id: 's-b', fact_id: 'b1' }),
      message(1, { facts: {}, session_id: 's-a', fact_id: 'a1' }),
      message(2, { facts: {}, session_id: 's-a', fact_id: 'a2' }),
    ];
    const first = await processor.process('facts', 0, input);
    expect(first.retry).toMatchObject({ offset: '0' });
    // a1 is to be dead-lettered, so a2 went ahead of it.
    expect(sessions.applied).toEqual(['s-a/a2']);
    // Redelivered, a1 would now succeed (its failure was once only), after a2: it is dead-lettered as decided.
    const second = await processor.process('facts', 0, input);
    expect(second.retry).toBeUndefined();
    expect(sessions.applied).toEqual(['s-a/a2', 's-b/b1']);
    expect(second.deadLetters.map((record) => String(record.headers?.error_code))).toEqual(['SESSION_FULL']);
    expect(second.results.map((record) => bodyOf(record).fact_id)).toEqual(['b1', 'a2']);
  });

  it('replays a run whose delivery failed from the writes it applied, without applying them again', async () => {
    const sessions = new FakeSessions();
    const processor = processorFor(sessions, true);
    const input = [1, 2, 3].map((offset) => message(offset, { facts: {}, domain: 'auth' }, 'user-9'));
    const first = await processor.process('facts', 0, input);
    // Delivery failed: nothing is marked delivered and the run comes again.
    const again = await processor.process('facts', 0, input);
    expect(sessions.applied).toEqual([
      'stream:auth:user-9/kafka:facts:0:1',
      'stream:auth:user-9/kafka:facts:0:2',
      'stream:auth:user-9/kafka:facts:0:3',
    ]);
    expect(again.results.map(bodyOf)).toEqual(first.results.map(bodyOf));
    expect(again.results.map((record) => bodyOf(record).activated)).toEqual([[1]]);
    processor.delivered('facts', 0, again.lastHandledOffset!);
    // Once delivered, the applied writes are forgotten.
    await processor.process('facts', 0, input.slice(2));
    expect(sessions.applied).toHaveLength(4);
  });

  it('in streaming mode publishes only writes that change the fired set, and dead-letters keyless or domainless facts', async () => {
    const sessions = new FakeSessions();
    const run = await processorFor(sessions, true).process('facts', 0, [
      message(0, { facts: {}, domain: 'auth' }, 'u'),
      message(1, { facts: {}, domain: 'auth' }, null),
      message(2, { facts: {}, domain: 'auth' }, 'u'),
      message(3, { facts: {} }, 'u'),
      message(4, { facts: {}, domain: 'auth' }, 'u'),
      message(5, { facts: {}, domain: 'auth' }, 'u'),
    ]);
    expect(run.lastHandledOffset).toBe('5');
    expect(run.results.map(bodyOf)).toEqual([
      expect.objectContaining({
        session_id: 'stream:auth:u',
        activated: [1],
        fact_count: 3,
        source: { topic: 'facts', partition: 0, offset: '4' },
      }),
    ]);
    expect(run.deadLetters.map((record) => [String(record.headers?.source_offset), String(record.headers?.error_code)])).toEqual([
      ['1', 'VALIDATION_ERROR'],
      ['3', 'VALIDATION_ERROR'],
    ]);
  });

  it('forgets applied writes of partitions it no longer owns', async () => {
    const sessions = new FakeSessions();
    const processor = processorFor(sessions);
    const input = [message(0, { facts: {}, session_id: 's-a', fact_id: 'a1' })];
    await processor.process('facts', 4, input);
    processor.forgetPartitionsExcept('facts', new Set([0]));
    await processor.process('facts', 4, input);
    expect(sessions.applied).toEqual(['s-a/a1', 's-a/a1']);
  });

  it('publishes the change of an applied write whose whole result is too large, without its fired rules and actions', async () => {
    const { sessions, processor } = streamingWithLongActions();
    const run = await processor.process(
      'facts',
      0,
      [0, 1, 2].map((i) => message(i, { facts: { n: i }, domain: 'auth' }, 'user-1')),
    );
    // The third fact fires rule 1: its result with the 2,000-character action would pass 1,000 bytes.
    expect(run.deadLetters).toEqual([]);
    expect(sessions.applied).toHaveLength(3);
    expect(run.results.map(bodyOf)).toEqual([
      expect.objectContaining({ activated: [1], deactivated: [], fired_rules: [], actions: [], truncated: true, execution_id: 'x-3' }),
    ]);
    expect(run.results[0]!.headers).toMatchObject({ 'correlation-id': 'c-2' });
  });

  it('dead-letters an applied write whose change alone is too large to publish, saying so', async () => {
    const { sessions, processor } = streamingWithLongActions();
    // A key of 900 bytes leaves no room for the change either.
    const key = 'k'.repeat(900);
    const run = await processor.process(
      'facts',
      0,
      [0, 1, 2].map((i) => message(i, { facts: { n: i }, domain: 'auth' }, key)),
    );
    expect(sessions.applied).toHaveLength(3);
    expect(run.results).toEqual([]);
    expect(run.deadLetters).toHaveLength(1);
    expect(String(run.deadLetters[0]!.headers?.error_detail)).toMatch(
      /^the session result is \d+ bytes even without its fired rules and actions, over the 1000-byte limit .*its change \(activated, deactivated\) is too large to publish$/,
    );
  });
});
