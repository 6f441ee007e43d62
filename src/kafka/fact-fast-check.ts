// A hand-written check of the common, valid fact message, so the hot path skips the schema walk; anything unusual
// (and every invalid message) falls through to the zod schema, which decides and explains. A property test keeps both in step.
import { type FactMessage, MAX_FACT_DEPTH } from '../contracts/kafka-messages.ts';

const DOMAIN_MAX = 100;
const ID_MAX = 200;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

function optionalText(value: unknown, max: number): boolean {
  return value === undefined || value === null || (typeof value === 'string' && value.length >= 1 && value.length <= max);
}

/**
 * Whether `value` (at nesting level `depth`) has anything below level `limit`, as nestsDeeperThan decides, without
 * allocating per object; the recursion stops at `limit`, so hostile nesting cannot overflow the stack.
 */
function nestsBelow(value: object, depth: number, limit: number): boolean {
  if (depth > limit) return true;
  if (Array.isArray(value)) {
    for (const child of value) if (typeof child === 'object' && child !== null && nestsBelow(child, depth + 1, limit)) return true;
    return false;
  }
  // for...in also visits inherited enumerable keys: at worst a message falls through to the schema, never past it.
  for (const key in value) {
    const child: unknown = (value as Record<string, unknown>)[key];
    if (typeof child === 'object' && child !== null && nestsBelow(child, depth + 1, limit)) return true;
  }
  return false;
}

/** The message as the schema would return it, or undefined when only the schema can tell. */
export function fastFactMessage(value: unknown): FactMessage | undefined {
  if (!isPlainObject(value)) return undefined;
  for (const key in value) {
    if (key !== 'facts' && key !== 'domain' && key !== 'session_id' && key !== 'fact_id') return undefined;
  }
  const { facts, domain, session_id, fact_id } = value;
  if (!isPlainObject(facts) || nestsBelow(facts, 1, MAX_FACT_DEPTH)) return undefined;
  // The schema trims domains; an untrimmed one is left to it.
  if (
    domain !== undefined &&
    domain !== null &&
    (typeof domain !== 'string' || domain.length === 0 || domain.length > DOMAIN_MAX || domain.trim() !== domain)
  ) {
    return undefined;
  }
  if (!optionalText(session_id, ID_MAX) || !optionalText(fact_id, ID_MAX)) return undefined;
  const message: FactMessage = { facts };
  if ('domain' in value) message.domain = domain as string | null | undefined;
  if ('session_id' in value) message.session_id = session_id as string | null | undefined;
  if ('fact_id' in value) message.fact_id = fact_id as string | null | undefined;
  return message;
}
