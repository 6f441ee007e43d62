// Structured JSON logs on standard output; keys and credentials are never written.
import { type Logger, pino } from 'pino';
import type { LogLevel } from './config.ts';

export type { Logger } from 'pino';

/** Writes synchronously to standard output unless given a destination: lines survive a process.exit right after. */
export function createLogger(level: LogLevel, destination: pino.DestinationStream = pino.destination({ fd: 1, sync: true })): Logger {
  return pino(
    {
      level,
      base: { service: 'rules-evaluation-service' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: ['req.headers.authorization', 'req.headers["x-api-key"]', '*.apiKeys', '*.databaseUrl'], censor: '[redacted]' },
    },
    destination,
  );
}
