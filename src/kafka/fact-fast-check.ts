// A hand-written check of the common, valid fact message, so the hot path skips the schema walk; anything unusual
// (and every invalid message) falls through to the zod schema, which decides and explains. A property test keeps both in step.
import { exceedsFactLimits } from '../contracts/json-depth.ts';
import type { FactMessage } from '../contracts/kafka-messages.ts';
import { isCommonDomain } from '../contracts/rule.ts';

const ID_MAX = 200;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

function optionalText(value: unknown, max: number): boolean {
  return value === undefined || value === null || (typeof value === 'string' && value.length >= 1 && value.length <= max);
}

/** The message as the schema would return it, or undefined when only the schema can tell. */
export function fastFactMessage(value: unknown): FactMessage | undefined {
  if (!isPlainObject(value)) return undefined;
  for (const key in value) {
    if (key !== 'facts' && key !== 'domain' && key !== 'session_id' && key !== 'fact_id') return undefined;
  }
  const { facts, domain, session_id, fact_id } = value;
  if (!isPlainObject(facts) || exceedsFactLimits(facts)) return undefined;
  // The schema trims domains; an untrimmed one is left to it.
  if (domain !== undefined && domain !== null && !isCommonDomain(domain)) return undefined;
  if (!optionalText(session_id, ID_MAX) || !optionalText(fact_id, ID_MAX)) return undefined;
  const message: FactMessage = { facts };
  if ('domain' in value) message.domain = domain as string | null | undefined;
  if ('session_id' in value) message.session_id = session_id as string | null | undefined;
  if ('fact_id' in value) message.fact_id = fact_id as string | null | undefined;
  return message;
}
