// Waiting with a bound: a peer that stops answering (a broker, Redis) would otherwise hold the call for its own long timeout.
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * `{ value }` once `promise` resolves, or undefined when `ms` pass first (its later rejection is then ignored); a
 * rejection in time is thrown. The timer never keeps the process alive.
 */
export async function within<T>(promise: Promise<T>, ms: number): Promise<{ value: T } | undefined> {
  const late = Symbol('late');
  const outcome = await Promise.race([promise, sleep(ms, late, { ref: false })]);
  if (outcome !== late) return { value: outcome as T };
  promise.catch(() => undefined);
  return undefined;
}
