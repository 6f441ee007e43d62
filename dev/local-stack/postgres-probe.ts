// PostgreSQL is never started here: the stack exposes the local server when it answers, and says so when none does.
import { postgresAnswers } from './probes.ts';
import type { ProvidedService } from './types.ts';
import { describeError } from './wait-until.ts';

/** The machine's server, as the `postgres` superuser on database `test` (trust authentication on loopback). */
export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test';

export type PostgresOutcome = ProvidedService | { readonly source: 'unavailable'; readonly reason: string };

export async function findPostgres(): Promise<PostgresOutcome> {
  try {
    await postgresAnswers(DEFAULT_DATABASE_URL);
    return { endpoint: DEFAULT_DATABASE_URL, source: 'existing', note: 'already running', stop: async () => undefined };
  } catch (error) {
    return { source: 'unavailable', reason: `${DEFAULT_DATABASE_URL} did not answer: ${describeError(error)}` };
  }
}
