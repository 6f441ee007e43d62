// Input checks both stores share, so the two implementations refuse exactly the same things.
import { AppError } from '../errors.ts';
import type { AccumulatorSpec, AddFactInput, Contribution, RetractFactInput } from './session-store.ts';
import type { FullBy, StoredFact } from './working-memory.ts';

export const DEFAULT_TTL_SECONDS = 3600;
export const MAX_TTL_SECONDS = 7 * 24 * 3600;

// No braces: ids go inside a Redis Cluster hash tag.
const ID_PATTERN = /^[A-Za-z0-9._:-]{1,200}$/;
const ONLY_DOTS = /^\.+$/;
const FUNCTIONS = new Set(['count', 'sum', 'avg', 'min', 'max']);

/**
 * How far past now + ttl a write moves the expiry when less than ttl is left (write-session.lua agrees): the next writes
 * within it need not refresh.
 */
export function refreshSlackMs(ttlMs: number): number {
  return Math.floor(ttlMs / 16);
}

export function checkId(kind: string, id: string): void {
  if (!ID_PATTERN.test(id)) {
    throw new AppError('VALIDATION_ERROR', `${kind} must be 1-200 characters of letters, digits, '.', '_', ':' or '-'.`);
  }
  // URLs drop '.' and '..' path segments (encoded or not): such an id could never be named in a request path.
  if (ONLY_DOTS.test(id))
    throw new AppError('VALIDATION_ERROR', `${kind} must not be made of dots only ('.' and '..' cannot be sent in a URL path).`);
}

export function checkTtl(ttlSeconds: number): void {
  if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > MAX_TTL_SECONDS) {
    throw new AppError('VALIDATION_ERROR', `ttl_seconds must be an integer from 1 to ${MAX_TTL_SECONDS} (7 days).`);
  }
}

/** Specs arrays already checked (callers never mutate one once passed), with their specs by id. */
const checkedSpecs = new WeakMap<readonly AccumulatorSpec[], Map<string, AccumulatorSpec>>();

export function checkSpecs(specs: readonly AccumulatorSpec[]): Map<string, AccumulatorSpec> {
  const checked = checkedSpecs.get(specs);
  if (checked !== undefined) return checked;
  const byId = new Map<string, AccumulatorSpec>();
  for (const spec of specs) {
    checkId('accumulator id', spec.id);
    if (byId.has(spec.id)) throw new AppError('VALIDATION_ERROR', `Accumulator id '${spec.id}' is declared twice.`);
    if (!FUNCTIONS.has(spec.fn)) throw new AppError('VALIDATION_ERROR', `Accumulator '${spec.id}' has unknown function.`);
    if (spec.windowMs !== undefined && (!Number.isInteger(spec.windowMs) || spec.windowMs < 1)) {
      throw new AppError('VALIDATION_ERROR', `Accumulator '${spec.id}' window must be a positive whole number of ms.`);
    }
    byId.set(spec.id, spec);
  }
  checkedSpecs.set(specs, byId);
  return byId;
}

/** Checks an add and returns the fact as the working memory stores it. */
export function checkAddFact(id: string, input: AddFactInput): StoredFact {
  checkId('session id', id);
  checkId('fact id', input.factId);
  checkTime('eventTimeMs', input.eventTimeMs);
  checkTime('now', input.now);
  checkMaxFacts(input.maxFacts);
  if (input.maxBytes !== undefined && !(Number.isInteger(input.maxBytes) && input.maxBytes >= 1)) {
    throw new AppError('VALIDATION_ERROR', 'maxBytes must be a positive integer.');
  }
  checkContributions(input.contributions, checkSpecs(input.specs));
  const json = JSON.stringify(input.fact);
  if (json === undefined) throw new AppError('VALIDATION_ERROR', 'The fact must be a JSON value.');
  return { json, eventTimeMs: input.eventTimeMs, contributions: input.contributions.map((c) => [c.accumulatorId, c.value] as const) };
}

export function checkRetractFact(id: string, factId: string, input: RetractFactInput): void {
  checkId('session id', id);
  checkId('fact id', factId);
  checkTime('now', input.now);
  checkSpecs(input.specs);
}

export function checkContributions(contributions: readonly Contribution[], specs: ReadonlyMap<string, AccumulatorSpec>): void {
  const seen = new Set<string>();
  for (const c of contributions) {
    if (!specs.has(c.accumulatorId)) {
      throw new AppError('VALIDATION_ERROR', `Contribution names undeclared accumulator '${c.accumulatorId}'.`);
    }
    if (seen.has(c.accumulatorId)) {
      throw new AppError('VALIDATION_ERROR', `Fact contributes twice to accumulator '${c.accumulatorId}'.`);
    }
    if (!Number.isFinite(c.value)) {
      throw new AppError('VALIDATION_ERROR', `Contribution to '${c.accumulatorId}' must be a finite number.`);
    }
    seen.add(c.accumulatorId);
  }
}

export function checkTime(name: string, ms: number): void {
  if (!Number.isFinite(ms)) throw new AppError('VALIDATION_ERROR', `${name} must be a finite epoch-ms number.`);
}

export function checkMaxFacts(maxFacts: number): void {
  if (!Number.isInteger(maxFacts) || maxFacts < 1) {
    throw new AppError('VALIDATION_ERROR', 'maxFacts must be a positive integer.');
  }
}

export function sessionFull(id: string, limits: { readonly maxFacts: number; readonly maxBytes?: number }, by: FullBy): AppError {
  if (by === 'fact') {
    return new AppError(
      'SESSION_FULL',
      `The fact is more than the ${limits.maxBytes} characters of fact JSON a session may hold (RULES_SESSION_MAX_BYTES); send a smaller one.`,
    );
  }
  if (by === 'bytes') {
    return new AppError(
      'SESSION_FULL',
      `Session '${id}' would hold more than ${limits.maxBytes} characters of fact JSON (RULES_SESSION_MAX_BYTES); retract facts first, or send a smaller one.`,
    );
  }
  return new AppError('SESSION_FULL', `Session '${id}' already holds the maximum of ${limits.maxFacts} facts; retract one first.`);
}

export function sessionExists(id: string): AppError {
  return new AppError('CONFLICT', `Session '${id}' already exists.`);
}
