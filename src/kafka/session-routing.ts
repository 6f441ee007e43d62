// Decides which fact messages go to a session (session_id given, or every keyed message in streaming mode) and how.
import { createHash } from 'node:crypto';
import type { FactMessage, SourcePosition } from '../contracts/kafka-messages.ts';
import { AppError } from '../errors.ts';
import type { SessionEvaluation, WriteOptions } from '../evaluation/session-evaluator.ts';
import { streamSessionId } from '../evaluation/session-evaluator.ts';

/** The session use case shared with /api/v1/sessions (src/evaluation/session-evaluator.ts). */
export interface KafkaSessions {
  addFact(sessionId: string, factId: string, event: Record<string, unknown>, options: WriteOptions): Promise<SessionEvaluation>;
  addFactToImplicitSession(
    key: string,
    domain: string,
    factId: string,
    event: Record<string, unknown>,
    options: WriteOptions,
  ): Promise<SessionEvaluation>;
}

/** What the router knows of the input message besides its decoded value. */
export interface FactContext {
  key: Buffer | null;
  source: SourcePosition;
}

/** One session write: `lane` names the session, so writes to one session run one after another in offset order. */
export interface SessionWork {
  lane: string;
  run(): Promise<SessionEvaluation>;
  /** Whether the evaluation is published: always for session_id messages, only on a change in streaming mode. */
  publishes(evaluation: SessionEvaluation): boolean;
}

/** Returns the session write for a message, undefined to evaluate it statelessly; throws AppError when it can never be routed. */
export type SessionRouter = (message: FactMessage, context: FactContext) => SessionWork | undefined;

const MAX_FACT_ID = 200;

/**
 * The fact id of a message that names none: its position, so a redelivered message (at-least-once) is a duplicate of the fact
 * it stored the first time instead of counting twice. Topic names fit the store's id alphabet; an overlong one is hashed.
 */
export function positionFactId(source: SourcePosition): string {
  const id = `kafka:${source.topic}:${source.partition}:${source.offset}`;
  if (id.length <= MAX_FACT_ID) return id;
  const topic = createHash('sha256').update(source.topic, 'utf8').digest('hex').slice(0, 32);
  return `kafka:${topic}:${source.partition}:${source.offset}`;
}

const BINARY = 'binary:';

/**
 * A message key as session text: UTF-8 when it decodes losslessly, else `binary:` + base64url of the bytes. A text key
 * that itself starts with `binary:` is encoded too, so no text key can name the session of a key that is not text.
 */
export function keyText(key: Buffer): string {
  const text = key.toString('utf8');
  return Buffer.from(text, 'utf8').equals(key) && !text.startsWith(BINARY) ? text : `${BINARY}${key.toString('base64url')}`;
}

/** `recordExecutions`: KAFKA_RECORD_EXECUTIONS, for session writes as for stateless ones. */
export function sessionRouter(sessions: KafkaSessions | undefined, streaming: boolean, recordExecutions = true): SessionRouter {
  const options: WriteOptions = { record: recordExecutions };
  return (message, { key, source }) => {
    const sessionId = message.session_id ?? undefined;
    if (sessionId === undefined && !streaming) return undefined;
    if (sessions === undefined) {
      throw new AppError('VALIDATION_ERROR', 'this pipeline was started without the session use case, so it cannot add facts to sessions');
    }
    const factId = message.fact_id ?? positionFactId(source);
    if (sessionId !== undefined) {
      if (message.domain !== undefined && message.domain !== null) {
        throw new AppError('VALIDATION_ERROR', "domain must be absent when session_id is given: a session evaluates its ruleset's domain");
      }
      return { lane: sessionId, run: () => sessions.addFact(sessionId, factId, message.facts, options), publishes: () => true };
    }
    if (key === null || key.length === 0) {
      throw new AppError('VALIDATION_ERROR', 'streaming mode needs a message key: each key is a session');
    }
    const domain = message.domain ?? undefined;
    if (domain === undefined) {
      throw new AppError('VALIDATION_ERROR', "streaming mode needs a domain: a key's session evaluates one domain's rules");
    }
    const text = keyText(key);
    return {
      lane: streamSessionId(domain, text),
      run: () => sessions.addFactToImplicitSession(text, domain, factId, message.facts, options),
      publishes: (evaluation) => evaluation.activated.length > 0 || evaluation.deactivated.length > 0,
    };
  };
}
