// Input checks both stores share, so the two implementations refuse exactly the same things.
import { AppError } from '../errors.ts';
import type { AccumulatorSpec, AggregatesAsOf, Contribution } from './session-store.ts';

export const DEFAULT_TTL_SECONDS = 3600;
export const MAX_TTL_SECONDS = 7 * 24 * 3600;

// No braces: ids go inside a Redis Cluster hash tag.
const ID_PATTERN = /^[A-Za-z0-9._:-]{1,200}$/;
const FUNCTIONS = new Set(['count', 'sum', 'avg', 'min', 'max']);

/** A write refreshes a session's TTL only once its expiry is more than this behind now + ttl (accumulators.lua agrees). */
export function refreshSlackMs(ttlMs: number): number {
  return Math.floor(ttlMs / 16);
}

export function checkId(kind: string, id: string): void {
  if (!ID_PATTERN.test(id)) {
    throw new AppError('VALIDATION_ERROR', `${kind} must be 1-200 characters of letters, digits, '.', '_', ':' or '-'.`);
  }
}

export function checkTtl(ttlSeconds: number): void {
  if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > MAX_TTL_SECONDS) {
    throw new AppError('VALIDATION_ERROR', `ttl_seconds must be an integer from 1 to ${MAX_TTL_SECONDS} (7 days).`);
  }
}

export function checkSpecs(specs: readonly AccumulatorSpec[]): Map<string, AccumulatorSpec> {
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
  return byId;
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

/** Aggregates setFired stores: accumulator ids as for specs, values finite or null, a finite time. */
export function checkAggregates(aggregates: AggregatesAsOf): void {
  checkTime('aggregates asOf', aggregates.asOf);
  for (const [accumulatorId, value] of Object.entries(aggregates.values)) {
    checkId('accumulator id', accumulatorId);
    if (value !== null && !Number.isFinite(value)) {
      throw new AppError('VALIDATION_ERROR', `Aggregate of '${accumulatorId}' must be a finite number or null.`);
    }
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

export function sessionFull(id: string, maxFacts: number): AppError {
  return new AppError('SESSION_FULL', `Session '${id}' already holds the maximum of ${maxFacts} facts; retract one first.`);
}

export function sessionExists(id: string): AppError {
  return new AppError('CONFLICT', `Session '${id}' already exists.`);
}
