// Structured JSON logs on standard output; keys and credentials are never written.
import { type Logger, pino } from 'pino';
import type { LogLevel } from './config.ts';

export type { Logger } from 'pino';

const CENSOR = '[redacted]';

/**
 * Writes synchronously to standard output unless given a destination: lines survive a process.exit right after.
 * `secrets` (the configured API keys) are replaced wherever a line holds them, e.g. a key a client sent as its request id.
 */
export function createLogger(
  level: LogLevel,
  destination: pino.DestinationStream = pino.destination({ fd: 1, sync: true }),
  secrets: readonly string[] = [],
): Logger {
  const scrub = scrubber(secrets);
  return pino(
    {
      level,
      base: { service: 'rules-evaluation-service' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      // A Redis client's error carries its failed command, whose arguments may be AUTH's user and password.
      redact: {
        paths: ['req.headers.authorization', 'req.headers["x-api-key"]', '*.apiKeys', '*.databaseUrl', '*.command.args'],
        censor: CENSOR,
      },
      ...(scrub === undefined ? {} : { hooks: { streamWrite: scrub } }),
    },
    destination,
  );
}

/**
 * Shortest secret replaced in lines: a shorter one ("0", "info") would also match timestamps, levels and numbers, and
 * break every line; a key that short is no secret anyway.
 */
export const MIN_SCRUBBED_LENGTH = 8;

/**
 * Replaces each secret in a written line, as it stands and as JSON escapes it (a key may hold `"` or `\`); undefined
 * when no secret is long enough to replace.
 */
function scrubber(secrets: readonly string[]): ((line: string) => string) | undefined {
  const forms = [...new Set(secrets.flatMap((secret) => [secret, JSON.stringify(secret).slice(1, -1)]))]
    .filter((form) => form.length >= MIN_SCRUBBED_LENGTH)
    // Longest first: a key holding another key is replaced whole.
    .sort((a, b) => b.length - a.length);
  if (forms.length === 0) return undefined;
  return (line) => {
    let scrubbed = line;
    for (const form of forms) if (scrubbed.includes(form)) scrubbed = scrubbed.replaceAll(form, CENSOR);
    return scrubbed;
  };
}

// kafkajs 2.2 arms a timer with a negative delay whenever no broker throttle is active; Node clamps it to 1 ms and warns.
const HARMLESS_WARNINGS = new Set(['TimeoutNegativeWarning']);

/** Replaces Node's printing of process warnings with `handle`, which never sees the harmless ones. */
function onProcessWarning(handle: (warning: Error) => void): void {
  process.removeAllListeners('warning');
  process.on('warning', (warning) => {
    if (!HARMLESS_WARNINGS.has(warning.name)) handle(warning);
  });
}

/**
 * For processes without a logger (benchmarks, dev scripts, the test runner): prints warnings as Node does, without the
 * harmless ones.
 */
export function printProcessWarnings(stream: NodeJS.WritableStream = process.stderr): void {
  onProcessWarning((warning) => stream.write(`(node:${process.pid}) ${warning.name}: ${warning.message}\n`));
}

/** Process warnings become JSON log lines like everything else (Node prints them as plain text on stderr by default). */
export function logProcessWarnings(logger: Logger): void {
  onProcessWarning((warning) =>
    logger.warn({ warning: { name: warning.name, message: warning.message } }, `process warning: ${warning.message}`),
  );
}
