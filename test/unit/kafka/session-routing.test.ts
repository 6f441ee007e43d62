import { describe, expect, it } from 'vitest';
import type { FactMessage } from '../../../src/contracts/kafka-messages.ts';
import { AppError } from '../../../src/errors.ts';
import type { SessionEvaluation } from '../../../src/evaluation/session-evaluator.ts';
import { type KafkaSessions, keyText, positionFactId, sessionRouter } from '../../../src/kafka/session-routing.ts';

const source = { topic: 'rules.facts', partition: 2, offset: '41' };

function evaluation(overrides: Partial<SessionEvaluation> = {}): SessionEvaluation {
  return {
    session_id: 's',
    fact_id: 'f',
    execution_id: 'e',
    fired_rules: [],
    actions: [],
    latency_ms: 1,
    activated: [],
    deactivated: [],
    fact_count: 1,
    revision: 1,
    replaced: false,
    duplicate: false,
    ...overrides,
  };
}

function recordingSessions(): { sessions: KafkaSessions; calls: unknown[][] } {
  const calls: unknown[][] = [];
  return {
    calls,
    sessions: {
      addFact: async (...args) => {
        calls.push(['addFact', ...args]);
        return evaluation();
      },
      addFactToImplicitSession: async (...args) => {
        calls.push(['implicit', ...args]);
        return evaluation();
      },
    },
  };
}

function errorOf(work: () => unknown): AppError {
  try {
    work();
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
  throw new Error('expected an AppError');
}

describe('positionFactId', () => {
  it('names the topic, partition and offset, so a redelivery reuses the id', () => {
    expect(positionFactId(source)).toBe('kafka:rules.facts:2:41');
    expect(positionFactId(source)).toMatch(/^[A-Za-z0-9._:-]{1,200}$/);
  });

  it('hashes an overlong topic name to stay within the 200-character id limit', () => {
    const id = positionFactId({ topic: 't'.repeat(249), partition: 0, offset: '9223372036854775807' });
    expect(id.length).toBeLessThanOrEqual(200);
    expect(id).toMatch(/^kafka:[0-9a-f]{32}:0:9223372036854775807$/);
  });
});

describe('keyText', () => {
  it('reads UTF-8 keys as text and other bytes as base64url', () => {
    expect(keyText(Buffer.from('user-7 é'))).toBe('user-7 é');
    expect(keyText(Buffer.from([0xff, 0xfe, 0x00]))).toBe('binary:__4A');
    // A text key spelling a binary key's session text is encoded too: the two keys never share a session.
    expect(keyText(Buffer.from([0xff]))).toBe('binary:_w');
    expect(keyText(Buffer.from('binary:_w'))).toBe(`binary:${Buffer.from('binary:_w').toString('base64url')}`);
    expect(keyText(Buffer.from('binary:_w'))).not.toBe(keyText(Buffer.from([0xff])));
  });
});

describe('sessionRouter', () => {
  const facts = { user: 'u1' };

  it('leaves facts without a session_id stateless when streaming is off', () => {
    const { sessions } = recordingSessions();
    expect(sessionRouter(sessions, false)({ facts, domain: 'auth' }, { key: Buffer.from('k'), source })).toBeUndefined();
  });

  it('adds a session_id fact to that session under its fact_id, or its position when it has none, and always publishes', async () => {
    const { sessions, calls } = recordingSessions();
    const route = sessionRouter(sessions, false);
    const named = route({ facts, session_id: 'rs-1-x', fact_id: 'f-1' }, { key: null, source })!;
    const unnamed = route({ facts, session_id: 'rs-1-x', fact_id: null }, { key: null, source })!;
    expect(named.lane).toBe('rs-1-x');
    await named.run();
    await unnamed.run();
    expect(calls).toEqual([
      ['addFact', 'rs-1-x', 'f-1', facts, { record: true }],
      ['addFact', 'rs-1-x', 'kafka:rules.facts:2:41', facts, { record: true }],
    ]);
    expect(named.publishes(evaluation())).toBe(true);
  });

  it('refuses a domain next to a session_id, since the session decides the domain', () => {
    const { sessions } = recordingSessions();
    const error = errorOf(() => sessionRouter(sessions, false)({ facts, session_id: 's', domain: 'auth' }, { key: null, source }));
    expect(error.code).toBe('VALIDATION_ERROR');
    expect(error.message).toBe("domain must be absent when session_id is given: a session evaluates its ruleset's domain");
  });

  it('in streaming mode adds every keyed fact to its key session over the domain and publishes only changes', async () => {
    const { sessions, calls } = recordingSessions();
    const work = sessionRouter(sessions, true)({ facts, domain: 'auth' }, { key: Buffer.from('user-1'), source })!;
    expect(work.lane).toBe('stream:auth:user-1');
    await work.run();
    expect(calls).toEqual([['implicit', 'user-1', 'auth', 'kafka:rules.facts:2:41', facts, { record: true }]]);
    expect(work.publishes(evaluation())).toBe(false);
    expect(work.publishes(evaluation({ activated: [3] }))).toBe(true);
    expect(work.publishes(evaluation({ deactivated: [3] }))).toBe(true);
    // A redelivered message carries the change its first write caused, so the change is published again, not lost.
    expect(work.publishes(evaluation({ duplicate: true, activated: [3] }))).toBe(true);
    expect(work.publishes(evaluation({ duplicate: true }))).toBe(false);
  });

  it('passes KAFKA_RECORD_EXECUTIONS=false on to session writes, so they write no execution record either', async () => {
    const { sessions, calls } = recordingSessions();
    await sessionRouter(sessions, true, false)({ facts, domain: 'auth' }, { key: Buffer.from('user-1'), source })!.run();
    await sessionRouter(sessions, false, false)({ facts, session_id: 'rs-1-x' }, { key: null, source })!.run();
    expect(calls.map((call) => call.at(-1))).toEqual([{ record: false }, { record: false }]);
  });

  it('in streaming mode still sends session_id facts to their own session', () => {
    const { sessions } = recordingSessions();
    const work = sessionRouter(sessions, true)({ facts, session_id: 'rs-2-y' }, { key: Buffer.from('k'), source })!;
    expect(work.lane).toBe('rs-2-y');
    expect(work.publishes(evaluation())).toBe(true);
  });

  it.each([
    [{ facts, domain: 'auth' } as FactMessage, null, 'streaming mode needs a message key: each key is a session'],
    [{ facts, domain: 'auth' } as FactMessage, Buffer.alloc(0), 'streaming mode needs a message key: each key is a session'],
    [{ facts } as FactMessage, Buffer.from('k'), "streaming mode needs a domain: a key's session evaluates one domain's rules"],
  ])('in streaming mode refuses %o with key %s', (message, key, detail) => {
    const { sessions } = recordingSessions();
    const error = errorOf(() => sessionRouter(sessions, true)(message, { key, source }));
    expect(error.code).toBe('VALIDATION_ERROR');
    expect(error.message).toBe(detail);
  });

  it('refuses session facts when the pipeline has no session use case', () => {
    const error = errorOf(() => sessionRouter(undefined, false)({ facts, session_id: 's' }, { key: null, source }));
    expect(error.code).toBe('VALIDATION_ERROR');
    expect(error.message).toMatch(/without the session use case/);
  });
});
