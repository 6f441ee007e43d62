// Builds the outgoing messages: a result for an evaluated fact, a dead letter for one that can never be evaluated.
import type { IHeaders, Message } from 'kafkajs';
import type { ResultMessage, SessionResultMessage, SourcePosition } from '../contracts/kafka-messages.ts';
import type { SessionEvaluation } from '../evaluation/session-evaluator.ts';
import { deadLetterHeaders, MAX_DETAIL_LENGTH, resultHeaders } from './headers.ts';
import { recordBytes } from './result-output.ts';

/** What the evaluate use case answers for one fact, as the result message needs it. */
export interface KafkaEvaluation {
  execution_id: string;
  fired_rules: number[];
  actions: string[];
  latency_ms: number;
  /** Null when the fact named no domain and every domain's rules were evaluated. */
  domain: string | null;
  revision: number;
}

/** The input message as read: key and value are the original bytes. */
export interface InputMessage {
  key: Buffer | null;
  value: Buffer | null;
  headers?: IHeaders;
  offset: string;
}

export function buildResult(evaluation: KafkaEvaluation, source: SourcePosition): ResultMessage {
  return {
    execution_id: evaluation.execution_id,
    fired_rules: evaluation.fired_rules,
    actions: evaluation.actions,
    latency_ms: evaluation.latency_ms,
    domain: evaluation.domain,
    revision: evaluation.revision,
    source,
  };
}

/** The result message, keyed like its input so one key's results share a partition and keep input order. */
export function resultRecord(input: InputMessage, evaluation: KafkaEvaluation, source: SourcePosition): Message {
  return { key: input.key, value: JSON.stringify(buildResult(evaluation, source)), headers: resultHeaders(input.headers) };
}

export function buildSessionResult(evaluation: SessionEvaluation, source: SourcePosition): SessionResultMessage {
  return {
    session_id: evaluation.session_id,
    fact_id: evaluation.fact_id,
    execution_id: evaluation.execution_id,
    fired_rules: evaluation.fired_rules,
    actions: evaluation.actions,
    activated: evaluation.activated,
    deactivated: evaluation.deactivated,
    fact_count: evaluation.fact_count,
    replaced: evaluation.replaced,
    duplicate: evaluation.duplicate,
    latency_ms: evaluation.latency_ms,
    revision: evaluation.revision,
    source,
  };
}

/** The session result message, keyed and headed like a stateless result. */
export function sessionResultRecord(input: InputMessage, evaluation: SessionEvaluation, source: SourcePosition): Message {
  return { key: input.key, value: JSON.stringify(buildSessionResult(evaluation, source)), headers: resultHeaders(input.headers) };
}

/** The session result without its fired rules and actions, for one too large to publish whole (see `truncated`). */
export function truncatedSessionResultRecord(input: InputMessage, evaluation: SessionEvaluation, source: SourcePosition): Message {
  const result: SessionResultMessage = { ...buildSessionResult(evaluation, source), fired_rules: [], actions: [], truncated: true };
  return { key: input.key, value: JSON.stringify(result), headers: resultHeaders(input.headers) };
}

/** The dead letter: original key and value bytes untouched, original headers plus the reason and the source position. */
export function deadLetterRecord(input: InputMessage, source: SourcePosition, failure: { code: string; detail: string }): Message {
  return {
    key: input.key,
    value: input.value,
    headers: deadLetterHeaders(input.headers, { ...failure, ...source }),
  };
}

/**
 * The dead letter of a message the dead-letter topic cannot take whole: its key (when that fits), the reason and the
 * source position, where the original bytes stay until the facts topic's retention removes them; refused by the broker, the
 * whole one would hold up its partition for good.
 */
export function positionOnlyDeadLetter(
  input: InputMessage,
  source: SourcePosition,
  failure: { code: string; detail: string },
  size: { bytes: number; limit: number },
): Message {
  const note = ` (original value and headers not copied: the dead letter would be ${size.bytes} bytes, over the ${size.limit} bytes the dead-letter topic takes in one message; read them at source_topic, source_partition, source_offset)`;
  const detail = `${failure.detail.slice(0, MAX_DETAIL_LENGTH - note.length)}${note}`;
  const record: Message = { key: input.key, value: null, headers: deadLetterHeaders(undefined, { ...failure, detail, ...source }) };
  return recordBytes(record) <= size.limit ? record : { ...record, key: null };
}
