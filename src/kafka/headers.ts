// Kafka header mapping: which input headers travel with a result or dead letter, and how header values read as text.
import type { IHeaders } from 'kafkajs';
import { DEAD_LETTER_HEADERS } from '../contracts/kafka-messages.ts';

/** Headers describing the input's encoding: a result is JSON whatever the input was, so these are not copied. */
const ENCODING_HEADERS = new Set(['content-type', 'content-encoding']);
const RESERVED_HEADERS = new Set<string>(Object.values(DEAD_LETTER_HEADERS));

/** A header value as text: Kafka headers are bytes; repeated headers keep their first value. */
export function headerText(value: IHeaders[string]): string | undefined {
  const first = Array.isArray(value) ? value[0] : value;
  if (first === undefined) return undefined;
  return typeof first === 'string' ? first : first.toString('utf8');
}

/**
 * The input headers a result carries (traceparent, tracestate, correlation-id and any custom header),
 * without the input's encoding headers and without names the dead-letter topic reserves.
 */
export function carriedHeaders(input: IHeaders | undefined): IHeaders {
  const carried: IHeaders = {};
  if (input === undefined) return carried;
  for (const name of Object.keys(input)) {
    const value = input[name];
    if (value === undefined) continue;
    const lower = name.toLowerCase();
    if (ENCODING_HEADERS.has(lower) || RESERVED_HEADERS.has(lower)) continue;
    carried[name] = value;
  }
  return carried;
}

// Encoded once: kafkajs would otherwise turn the string into a new Buffer for every result.
const JSON_CONTENT_TYPE = Buffer.from('application/json');

/** Headers of a result message: the carried input headers plus the result's own content type. */
export function resultHeaders(input: IHeaders | undefined): IHeaders {
  const headers = carriedHeaders(input);
  headers['content-type'] = JSON_CONTENT_TYPE;
  return headers;
}

export interface DeadLetterReason {
  code: string;
  detail: string;
  topic: string;
  partition: number;
  offset: string;
}

/** Longest error_detail written: headers count against the broker's message size limit. */
export const MAX_DETAIL_LENGTH = 2_000;

/** Headers of a dead letter: every original header (encoding included, since the bytes are the original ones) plus the reason. */
export function deadLetterHeaders(input: IHeaders | undefined, reason: DeadLetterReason): IHeaders {
  const headers: IHeaders = {};
  for (const [name, value] of Object.entries(input ?? {})) {
    if (value !== undefined && !RESERVED_HEADERS.has(name.toLowerCase())) headers[name] = value;
  }
  headers[DEAD_LETTER_HEADERS.errorCode] = reason.code;
  headers[DEAD_LETTER_HEADERS.errorDetail] = reason.detail.slice(0, MAX_DETAIL_LENGTH);
  headers[DEAD_LETTER_HEADERS.sourceTopic] = reason.topic;
  headers[DEAD_LETTER_HEADERS.sourcePartition] = String(reason.partition);
  headers[DEAD_LETTER_HEADERS.sourceOffset] = reason.offset;
  return headers;
}
