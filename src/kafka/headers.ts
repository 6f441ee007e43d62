// Kafka header mapping: which input headers travel with a result or dead letter, and how header values read as text.
import type { IHeaders } from 'kafkajs';
import { DEAD_LETTER_HEADERS } from '../contracts/kafka-messages.ts';

/** Headers describing the input's encoding: a result is JSON whatever the input was, so these are not copied. */
const ENCODING_HEADERS = new Set(['content-type', 'content-encoding']);
const RESERVED_HEADERS = new Set<string>(Object.values(DEAD_LETTER_HEADERS));

type HeaderValue = NonNullable<IHeaders[string]>;

/**
 * A header value as kafkajs decoded it, cleaned: its decoder starts a header named like an Object.prototype member
 * (`toString`, `constructor`) with the inherited function, which no produce request can encode.
 */
function headerValue(value: unknown): HeaderValue | undefined {
  if (typeof value === 'string' || Buffer.isBuffer(value)) return value;
  if (!Array.isArray(value)) return undefined;
  const kept = value.filter((item): item is string | Buffer => typeof item === 'string' || Buffer.isBuffer(item));
  if (kept.length === 0) return undefined;
  return kept.length === 1 ? kept[0] : kept;
}

/**
 * The input's headers as [name, value] pairs. A header named `__proto__` is no own property there: kafkajs's decoder
 * assigned [Object.prototype, value] to it, which set the object's prototype; its value is read back from that.
 */
function inputHeaders(input: IHeaders | undefined): [string, HeaderValue][] {
  if (input === undefined) return [];
  const pairs: [string, HeaderValue][] = [];
  const proto: unknown = Object.getPrototypeOf(input);
  const protoValue = Array.isArray(proto) ? headerValue(proto) : undefined;
  if (protoValue !== undefined) pairs.push(['__proto__', protoValue]);
  for (const name of Object.keys(input)) {
    const value = headerValue(input[name]);
    if (value !== undefined) pairs.push([name, value]);
  }
  return pairs;
}

/** Sets a header as an own property, `__proto__` included, so the produce request encodes it. */
function setHeader(headers: IHeaders, name: string, value: HeaderValue): void {
  if (name === '__proto__') Object.defineProperty(headers, name, { value, enumerable: true, writable: true, configurable: true });
  else headers[name] = value;
}

/** A header value as text: Kafka headers are bytes; repeated headers keep their first value. */
export function headerText(value: IHeaders[string]): string | undefined {
  const cleaned = headerValue(value);
  const first = Array.isArray(cleaned) ? cleaned[0] : cleaned;
  if (first === undefined) return undefined;
  return typeof first === 'string' ? first : first.toString('utf8');
}

/**
 * The input headers a result carries (traceparent, tracestate, correlation-id and any custom header),
 * without the input's encoding headers and without names the dead-letter topic reserves.
 */
export function carriedHeaders(input: IHeaders | undefined): IHeaders {
  const carried: IHeaders = {};
  for (const [name, value] of inputHeaders(input)) {
    const lower = name.toLowerCase();
    if (ENCODING_HEADERS.has(lower) || RESERVED_HEADERS.has(lower)) continue;
    setHeader(carried, name, value);
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
  for (const [name, value] of inputHeaders(input)) {
    if (!RESERVED_HEADERS.has(name.toLowerCase())) setHeader(headers, name, value);
  }
  headers[DEAD_LETTER_HEADERS.errorCode] = reason.code;
  headers[DEAD_LETTER_HEADERS.errorDetail] = reason.detail.slice(0, MAX_DETAIL_LENGTH);
  headers[DEAD_LETTER_HEADERS.sourceTopic] = reason.topic;
  headers[DEAD_LETTER_HEADERS.sourcePartition] = String(reason.partition);
  headers[DEAD_LETTER_HEADERS.sourceOffset] = reason.offset;
  return headers;
}
