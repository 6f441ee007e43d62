// One zod schema for the environment: loadConfig(env) turns it into a frozen, typed Config or names every bad variable.
import { isIP } from 'node:net';
import { z } from 'zod';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const API_SCOPES = ['admin', 'evaluate'] as const;
export type ApiScope = (typeof API_SCOPES)[number];

/** One accepted API key. `name` is what the audit trail records as actor; the key itself is never logged or stored. */
export interface ApiKey {
  readonly name: string;
  readonly key: string;
  readonly scope: ApiScope;
}

export interface HttpConfig {
  readonly port: number;
  readonly host: string;
  /** Largest accepted request body in bytes. */
  readonly bodyLimit: number;
  /** Most facts one bulk request may carry. */
  readonly bulkMax: number;
  /**
   * Execution records waiting to be written past which requests that record one answer 503 (and readiness fails): while
   * the database is away they would otherwise pile up in memory until the process runs out of it.
   */
  readonly executionBacklogMax: number;
  /** Accepted keys; null turns authentication off (every caller is "anonymous" with admin rights). */
  readonly apiKeys: readonly ApiKey[] | null;
  readonly metrics: 'off' | 'prometheus';
}

export interface StorageConfig {
  /** PostgreSQL connection string; when absent the embedded PGlite database in dataDir is used. */
  readonly databaseUrl: string | undefined;
  readonly dataDir: string;
}

export interface ExecutionsConfig {
  /** Executions older than this are deleted by the periodic cleanup. */
  readonly retentionMs: number;
  readonly cleanupIntervalMs: number;
}

export interface KafkaConfig {
  /** Empty when Kafka is not configured. */
  readonly brokers: readonly string[];
  readonly factsTopic: string;
  readonly resultsTopic: string;
  readonly dlqTopic: string;
  /** The compacted topic rule changes travel on between the instances of one deployment. */
  readonly changelogTopic: string;
  readonly groupId: string;
  readonly exactlyOnce: boolean;
  readonly streaming: boolean;
  /** Write an execution record for every Kafka result (looked up by GET /api/v1/executions/{id}). */
  readonly recordExecutions: boolean;
  readonly partitions: number;
  /** Largest result message (key plus value bytes); a larger result dead-letters its input with PAYLOAD_TOO_LARGE. */
  readonly maxResultBytes: number;
  readonly schemaRegistryUrl: string | undefined;
}

export interface Config {
  readonly http: HttpConfig;
  readonly storage: StorageConfig;
  readonly executions: ExecutionsConfig;
  readonly log: { readonly level: LogLevel };
  readonly kafka: KafkaConfig;
  readonly redis: {
    readonly url: string | undefined;
    /** How long a Redis command may go unanswered before the call fails as UNAVAILABLE. */
    readonly commandTimeoutMs: number;
    /** Start of every session key (REDIS_KEY_PREFIX), so deployments sharing one Redis keep their sessions apart. */
    readonly keyPrefix: string;
  };
  readonly sessions: {
    readonly maxFacts: number;
    /** Characters of fact JSON one session may hold (RULES_SESSION_MAX_BYTES). */
    readonly maxBytes: number;
    /** Facts of Redis sessions an instance keeps a copy of (each cached session counts one more); 0: none. */
    readonly cacheFacts: number;
    /** Fact field (a path) holding a session fact's event time: ISO 8601 or epoch ms; absent, arrival time. */
    readonly timestampField: string;
    /** TTL of the key sessions the Kafka streaming mode creates, whole seconds. */
    readonly streamingTtlSeconds: number;
  };
  /** Longest a graceful shutdown may take before the process exits anyway. */
  readonly shutdownTimeoutMs: number;
}

/** The compacted topic rule changes travel on between instances, unless KAFKA_CHANGELOG_TOPIC names another. */
export const CHANGELOG_TOPIC = 'rules.changelog';

/** Thrown by loadConfig; the message names every bad variable, one per line. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 } as const;
const UNIT_BYTES = { b: 1, kb: 1_024, k: 1_024, kib: 1_024, mb: 1_048_576, m: 1_048_576, mib: 1_048_576 } as const;

/** "7d", "12h", "90m", "30s", "250ms" or a plain number of seconds → milliseconds; undefined when malformed. */
export function parseDuration(text: string): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)?\s*$/i.exec(text);
  // "1M" reads as a month to some and a minute to others: a capital M is refused rather than guessed.
  if (match === null || match[2] === 'M') return undefined;
  const unit = (match[2]?.toLowerCase() ?? 's') as keyof typeof UNIT_MS;
  return Math.round(Number(match[1]) * UNIT_MS[unit]);
}

/** "1048576", "512kb", "1mb" or "1MiB" → bytes; undefined when malformed. */
export function parseByteSize(text: string): number | undefined {
  const match = /^\s*(\d+)\s*(b|kb|k|kib|mb|m|mib)?\s*$/i.exec(text);
  if (match === null) return undefined;
  const unit = (match[2]?.toLowerCase() ?? 'b') as keyof typeof UNIT_BYTES;
  return Number(match[1]) * UNIT_BYTES[unit];
}

/**
 * RULES_API_KEYS: comma-separated `[name=]key:scope`. Without a name the actor is `key-<position>` (1-based).
 * The scope is after the last colon, so a key may itself contain colons.
 */
export function parseApiKeys(text: string): { keys: ApiKey[] } | { problem: string } {
  const keys: ApiKey[] = [];
  const entries = text
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  if (entries.length === 0) return { problem: 'must list at least one <key>:<scope> entry' };
  for (const [index, entry] of entries.entries()) {
    const colon = entry.lastIndexOf(':');
    if (colon < 0) return { problem: `entry ${index + 1} must be [name=]key:scope` };
    const scope = entry.slice(colon + 1).trim();
    const head = entry.slice(0, colon);
    const equals = head.indexOf('=');
    const name = equals < 0 ? `key-${index + 1}` : head.slice(0, equals).trim();
    const key = (equals < 0 ? head : head.slice(equals + 1)).trim();
    if (!(API_SCOPES as readonly string[]).includes(scope)) {
      // Not echoed: with the scope forgotten, the text after the last colon is part of the key.
      return { problem: `entry ${index + 1} has no valid scope after its last colon; expected one of ${API_SCOPES.join(', ')}` };
    }
    if (key === '') return { problem: `entry ${index + 1} has an empty key` };
    // A space cannot follow `Bearer`, and header values are read as Latin-1, not as the environment's UTF-8.
    if (!/^[\x21-\x7e]+$/.test(key)) {
      return { problem: `entry ${index + 1} has a key with a space or a character outside printable ASCII, which no header can carry` };
    }
    // An unnamed base64 key (`dGVzdA==:admin`) would otherwise become the name "dGVzdA" and the key "=".
    if (key.startsWith('=')) {
      return { problem: `entry ${index + 1} has a key that starts with "="; a key containing "=" needs a name: name=key:scope` };
    }
    if (name === '') return { problem: `entry ${index + 1} has an empty name` };
    if (keys.some((other) => other.key === key)) return { problem: `entry ${index + 1} repeats a key` };
    if (keys.some((other) => other.name === name)) return { problem: `entry ${index + 1} repeats the name "${name}"` };
    keys.push({ name, key, scope: scope as ApiScope });
  }
  return { keys };
}

const emptyAsUnset = (value: unknown) => (typeof value === 'string' && value.trim() === '' ? undefined : value);
const optional = <T extends z.ZodType>(schema: T) => z.preprocess(emptyAsUnset, schema.optional());

const integer = (min: number, max: number, fallback: number) =>
  optional(z.string()).transform((value, ctx) => {
    if (value === undefined) return fallback;
    // One message a variable: the first rule it breaks.
    const problem = !/^\s*\d+\s*$/.test(value)
      ? 'must be a whole number'
      : Number(value) < min
        ? `must be at least ${min}`
        : Number(value) > max
          ? `must be at most ${max}`
          : undefined;
    if (problem === undefined) return Number(value);
    ctx.addIssue({ code: 'custom', message: problem });
    return z.NEVER;
  });

const text = (fallback: string) => optional(z.string().trim().min(1)).transform((value) => value ?? fallback);
/** A Kafka topic name: what the broker accepts (letters, digits, '.', '_', '-'; at most 249 characters). */
const topic = (fallback: string) =>
  text(fallback).pipe(
    z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,249}$/, "must be a Kafka topic name: letters, digits, '.', '_' or '-', at most 249 characters")
      .refine((name) => name !== '.' && name !== '..', "must be a Kafka topic name other than '.' or '..'"),
  );
/** The words docs/operations.md lists (any case); zod's own list also takes y/n and enabled/disabled. */
const BOOLEAN_WORDS = { truthy: ['true', '1', 'yes', 'on'], falsy: ['false', '0', 'no', 'off'] };
const flag = (fallback: boolean) =>
  optional(
    z
      .string()
      .trim()
      .pipe(z.stringbool({ ...BOOLEAN_WORDS, error: `must be one of ${[...BOOLEAN_WORDS.truthy, ...BOOLEAN_WORDS.falsy].join(', ')}` })),
  ).transform((value) => value ?? fallback);

/** Longest delay a Node timer keeps (about 24.8 days); a longer one fires after 1 ms instead. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * Largest request body. Fastify holds a JSON body as one string, and V8's longest string is just under 512 MiB: a larger
 * body crashed the process; half of that leaves room for the parsed value too.
 */
const MAX_BODY_LIMIT = 256 * 1_048_576;
/** Largest RULES_SESSION_MAX_BYTES: a session read whole (GET) must stay one string V8 can make. */
const MAX_SESSION_BYTES = 256 * 1_048_576;

/** Longest retention: a cutoff further back than this stops being a date the database takes. */
const MAX_RETENTION_MS = 100 * 365 * 86_400_000;

/** A size in bytes (or kb/mb), from 1 kb to `max` (256 mb for both its uses). */
const byteSize = (fallback: string, max: number, example: string) =>
  optional(z.string())
    .transform((value, ctx) => {
      const bytes = parseByteSize(value ?? fallback);
      if (bytes === undefined || bytes < 1_024 || bytes > max) {
        ctx.addIssue({ code: 'custom', message: `must be a size from 1kb to ${max / 1_048_576}mb, ${example}` });
        return z.NEVER;
      }
      return bytes;
    })
    .pipe(z.number());

const duration = (fallback: string, maxMs = Number.MAX_SAFE_INTEGER, why = 'it sets a timer', minMs = 1) =>
  optional(z.string())
    .transform((value, ctx) => {
      const ms = parseDuration(value ?? fallback);
      if (ms === undefined || ms <= 0) {
        ctx.addIssue({ code: 'custom', message: 'must be a positive duration such as 7d, 12h, 30m or a number of seconds' });
        return z.NEVER;
      }
      if (ms < minMs) {
        ctx.addIssue({ code: 'custom', message: `must be at least ${minMs} ms` });
        return z.NEVER;
      }
      if (ms > maxMs) {
        ctx.addIssue({ code: 'custom', message: `must be at most ${Math.floor(maxMs / 1000)} seconds: ${why}` });
        return z.NEVER;
      }
      return ms;
    })
    .pipe(z.number());

/** A URL of one of `protocols` (`example` shows one); `parts` checks what its path or query mean, if anything. One message at most. */
const url = (protocols: RegExp, example: string, parts?: { test: (url: URL) => boolean; problem: string }, hint?: string) =>
  optional(
    z
      .string()
      .trim()
      .superRefine((value, ctx) => {
        const problem = !URL.canParse(value)
          ? `must be a URL with a valid host and port, e.g. ${example}${hint ?? ''}`
          : !protocols.test(new URL(value).protocol)
            ? `must be a URL of the form ${example}`
            : // An empty host (a template's unset variable) would make the client fall back to localhost without a word.
              !hasHost(new URL(value))
              ? `must name a host, e.g. ${example}`
              : parts !== undefined && !parts.test(new URL(value))
                ? parts.problem
                : undefined;
        if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
      }),
  );

/** A host name (labels of letters, digits, '-' and '_'), an IPv4 or an IPv6 address (with a zone), as a server binds it. */
function isHost(host: string): boolean {
  if (host.includes(':')) return isIP(host.split('%')[0] ?? '') === 6;
  if (/^[\d.]+$/.test(host)) return isIP(host) === 4;
  // Underscores too: container platforms name services so (rules_api), and the resolver finds them.
  return /^(?!-)[\w-]{1,63}(?<!-)(\.(?!-)[\w-]{1,63}(?<!-))*\.?$/.test(host);
}

/** A host in the URL; PostgreSQL URLs are checked in loadConfig, where PGHOST can stand in for one. */
function hasHost(parsed: URL): boolean {
  return parsed.hostname !== '' || /^postgres(ql)?:$/.test(parsed.protocol);
}

/**
 * A PostgreSQL URL names its server by host, by a `host=` parameter (a socket directory: postgresql:///db?host=/run/pg)
 * or, with neither, through PGHOST as libpq and pg read it; without any of them pg would try localhost unasked.
 */
function databaseHostProblem(env: Readonly<Record<string, string | undefined>>): string | undefined {
  const databaseUrl = valid(env, 'DATABASE_URL');
  if (databaseUrl === undefined) return undefined;
  const parsed = new URL(databaseUrl);
  if (parsed.hostname !== '' || (parsed.searchParams.get('host') ?? '') !== '' || (env.PGHOST ?? '').trim() !== '') return undefined;
  return 'DATABASE_URL: must name a host, e.g. postgres://db:5432/rules (or a socket directory with ?host=, or set PGHOST)';
}

const envSchema = z.object({
  PORT: integer(0, 65_535, 8080),
  HOST: optional(
    z
      .string()
      .trim()
      // A host name or an IPv4/IPv6 address (with a zone): anything else fails only when the server binds.
      .refine(isHost, 'must be a host name or an IP address (IPv6 without brackets), e.g. 0.0.0.0, ::, 127.0.0.1 or localhost'),
  ).transform((value) => value ?? '0.0.0.0'),
  DATABASE_URL: url(
    /^postgres(ql)?:$/,
    'postgres://db:5432/rules',
    undefined,
    ' (special characters of the user and password percent-encoded; a socket directory as postgresql:///rules?host=/run/postgresql&user=me)',
  ),
  RULES_DATA_DIR: text('./data'),
  RULES_LOG_LEVEL: optional(
    z
      .string()
      .trim()
      .toLowerCase()
      .transform((value) => (value === 'warning' ? 'warn' : value))
      .pipe(z.enum(LOG_LEVELS, { error: `must be one of ${LOG_LEVELS.join(', ')} (any case)` })),
  ).transform((value) => value ?? 'info'),
  RULES_BODY_LIMIT: byteSize('1mib', MAX_BODY_LIMIT, 'e.g. 1048576, 512kb or 1mb'),
  RULES_BULK_MAX: integer(1, 1_000_000, 10_000),
  RULES_EXECUTION_BACKLOG_MAX: integer(1_000, 100_000_000, 1_000_000),
  RULES_EXECUTION_RETENTION: duration('7d', MAX_RETENTION_MS, 'about 100 years'),
  // Each interval runs a DELETE: one every millisecond would keep the database busy for nothing.
  RULES_EXECUTION_CLEANUP_INTERVAL: duration('1h', MAX_TIMER_MS, 'about 24 days, the longest timer Node keeps', 1_000),
  // Below a second no shutdown could finish: every stop would end in the timeout's exit 1.
  RULES_SHUTDOWN_TIMEOUT: duration('30s', MAX_TIMER_MS, 'about 24 days, the longest timer Node keeps', 1_000),
  RULES_API_KEYS: optional(z.string())
    .transform((value, ctx) => {
      if (value === undefined) return null;
      const parsed = parseApiKeys(value);
      if ('problem' in parsed) {
        ctx.addIssue({ code: 'custom', message: parsed.problem });
        return z.NEVER;
      }
      return parsed.keys;
    })
    .pipe(z.array(z.custom<ApiKey>()).nullable()),
  RULES_METRICS: optional(
    z
      .string()
      .trim()
      .toLowerCase()
      .pipe(z.enum(['off', 'prometheus'], { error: 'must be off or prometheus' })),
  ).transform((value) => value ?? 'off'),
  KAFKA_BROKERS: optional(z.string()).transform((value, ctx) => {
    const brokers = (value ?? '')
      .split(',')
      .map((broker) => broker.trim())
      .filter((broker) => broker !== '');
    // Set but naming none (", "): a template's unset variables, not a wish to run without Kafka.
    if (value !== undefined && brokers.length === 0) ctx.addIssue({ code: 'custom', message: 'must list host:port brokers, or be unset' });
    // One message a variable: the first broker that is not host:port.
    const bad = brokers.find((broker) => {
      const port = Number(/^[^\s:/]+:(\d{1,5})$/.exec(broker)?.[1] ?? Number.NaN);
      return !(port >= 1 && port <= 65_535);
    });
    if (bad !== undefined) ctx.addIssue({ code: 'custom', message: `"${bad}" must be host:port (a port from 1 to 65535)` });
    return brokers;
  }),
  KAFKA_FACTS_TOPIC: topic('rules.facts'),
  KAFKA_RESULTS_TOPIC: topic('rules.results'),
  KAFKA_DLQ_TOPIC: topic('rules.facts.dlq'),
  KAFKA_CHANGELOG_TOPIC: topic(CHANGELOG_TOPIC),
  KAFKA_GROUP_ID: text('rules-evaluator'),
  KAFKA_EXACTLY_ONCE: flag(false),
  KAFKA_STREAMING: flag(false),
  // Sessions hold at most 7 days, like those created over HTTP.
  KAFKA_STREAMING_SESSION_TTL: duration('1h', 7 * 86_400_000, 'sessions live at most 7 days', 1_000),
  KAFKA_RECORD_EXECUTIONS: flag(true),
  KAFKA_PARTITIONS: integer(1, 10_000, 3),
  KAFKA_MAX_RESULT_BYTES: integer(1_000, 100_000_000, 1_000_000),
  SCHEMA_REGISTRY_URL: url(/^https?:$/, 'http://registry:8080/apis/ccompat/v7'),
  // The path (or ioredis's `db` parameter) names the database by number; anything else made ioredis select NaN and the
  // process fail later.
  REDIS_URL: url(/^rediss?:$/, 'redis://cache:6379', {
    test: (parsed) => /^(\/(\d{1,9})?)?$/.test(parsed.pathname) && parsed.searchParams.getAll('db').every((db) => /^\d{1,9}$/.test(db)),
    problem: 'must name its database by number, if at all, e.g. redis://cache:6379/0',
  }),
  // Below 100 ms a Redis on the same host under load would be taken for an absent one.
  REDIS_COMMAND_TIMEOUT: duration('5s', MAX_TIMER_MS, 'about 24 days, the longest timer Node keeps', 100),
  // No braces: a session's keys carry its id as a Redis Cluster hash tag, which a brace in front would displace.
  REDIS_KEY_PREFIX: text('rules:').pipe(
    z.string().regex(/^[A-Za-z0-9._:-]{1,64}$/, "must be 1 to 64 letters, digits, '.', '_', ':' or '-'"),
  ),
  RULES_SESSION_MAX_FACTS: integer(1, 10_000_000, 10_000),
  // A session read is one JSON text, and V8's longest string is just under 512 MiB.
  RULES_SESSION_MAX_BYTES: byteSize('64mib', MAX_SESSION_BYTES, 'e.g. 67108864, 65536kb or 64mb'),
  RULES_SESSION_CACHE_FACTS: integer(0, 100_000_000, 100_000),
  RULES_SESSION_TIMESTAMP_FIELD: optional(z.string().trim().min(1).max(256, 'must be at most 256 characters')).transform(
    (value) => value ?? 'timestamp',
  ),
});

/** Every variable loadConfig reads, for docs and for the test that keeps them in step. */
export const CONFIG_VARIABLES = Object.keys(envSchema.shape) as readonly (keyof typeof envSchema.shape)[];

/** Parses the environment once. Pure: reads only `env`; throws ConfigError naming every bad variable. */
export function loadConfig(env: Readonly<Record<string, string | undefined>>): Config {
  const parsed = envSchema.safeParse(env);
  const lines = parsed.success
    ? []
    : parsed.error.issues.map((issue) => {
        const variable = String(issue.path[0] ?? 'environment');
        const got = env[variable];
        // Secrets are never echoed back: only non-secret variables show the value that was rejected.
        const shown = got === undefined || /KEY|URL/.test(variable) ? '' : ` (got "${got}")`;
        return `${variable}: ${issue.message}${shown}`;
      });
  // Checks across variables, over those that are valid on their own: a bad PORT does not hide a topic clash.
  lines.push(...topicClashes(env), ...[databaseHostProblem(env)].filter((problem) => problem !== undefined));
  if (lines.length > 0 || !parsed.success) throw new ConfigError(`Invalid configuration:\n  ${lines.join('\n  ')}`);
  const e = parsed.data;
  return deepFreeze({
    http: {
      port: e.PORT,
      host: e.HOST,
      bodyLimit: e.RULES_BODY_LIMIT,
      bulkMax: e.RULES_BULK_MAX,
      executionBacklogMax: e.RULES_EXECUTION_BACKLOG_MAX,
      apiKeys: e.RULES_API_KEYS,
      metrics: e.RULES_METRICS,
    },
    storage: { databaseUrl: e.DATABASE_URL, dataDir: e.RULES_DATA_DIR },
    executions: { retentionMs: e.RULES_EXECUTION_RETENTION, cleanupIntervalMs: e.RULES_EXECUTION_CLEANUP_INTERVAL },
    log: { level: e.RULES_LOG_LEVEL },
    kafka: {
      brokers: e.KAFKA_BROKERS,
      factsTopic: e.KAFKA_FACTS_TOPIC,
      resultsTopic: e.KAFKA_RESULTS_TOPIC,
      dlqTopic: e.KAFKA_DLQ_TOPIC,
      changelogTopic: e.KAFKA_CHANGELOG_TOPIC,
      groupId: e.KAFKA_GROUP_ID,
      exactlyOnce: e.KAFKA_EXACTLY_ONCE,
      streaming: e.KAFKA_STREAMING,
      recordExecutions: e.KAFKA_RECORD_EXECUTIONS,
      partitions: e.KAFKA_PARTITIONS,
      maxResultBytes: e.KAFKA_MAX_RESULT_BYTES,
      schemaRegistryUrl: e.SCHEMA_REGISTRY_URL,
    },
    redis: { url: e.REDIS_URL, commandTimeoutMs: e.REDIS_COMMAND_TIMEOUT, keyPrefix: e.REDIS_KEY_PREFIX },
    sessions: {
      maxFacts: e.RULES_SESSION_MAX_FACTS,
      maxBytes: e.RULES_SESSION_MAX_BYTES,
      cacheFacts: e.RULES_SESSION_CACHE_FACTS,
      timestampField: e.RULES_SESSION_TIMESTAMP_FIELD,
      streamingTtlSeconds: Math.ceil(e.KAFKA_STREAMING_SESSION_TTL / 1_000),
    },
    shutdownTimeoutMs: e.RULES_SHUTDOWN_TIMEOUT,
  });
}

/** A variable's value as loadConfig reads it, or undefined when the variable is bad on its own (already reported). */
function valid(env: Readonly<Record<string, string | undefined>>, variable: TopicVariable | 'DATABASE_URL'): string | undefined {
  const parsed = envSchema.shape[variable].safeParse(env[variable]);
  return parsed.success ? parsed.data : undefined;
}

type TopicVariable = 'KAFKA_FACTS_TOPIC' | 'KAFKA_RESULTS_TOPIC' | 'KAFKA_DLQ_TOPIC' | 'KAFKA_CHANGELOG_TOPIC';

/**
 * Two roles on one topic loop or mix messages: a dead letter on the facts topic is read back and dead-lettered again
 * without end, results on it are evaluated as facts, and the rule changelog is compacted. A clash is reported on the
 * variable that was set (the later one when both were).
 */
function topicClashes(env: Readonly<Record<string, string | undefined>>): string[] {
  const variables = ['KAFKA_FACTS_TOPIC', 'KAFKA_RESULTS_TOPIC', 'KAFKA_DLQ_TOPIC', 'KAFKA_CHANGELOG_TOPIC'] as const;
  const roles = variables.map((variable) => [variable, valid(env, variable)] as const);
  const isSet = (variable: TopicVariable) => (env[variable] ?? '').trim() !== '';
  const blamed = new Map<TopicVariable, string>();
  for (const [i, [variable, name]] of roles.entries()) {
    if (name === undefined) continue;
    const earlier = roles.slice(0, i).find(([, other]) => other === name);
    if (earlier === undefined) continue;
    const [culprit, other] = isSet(variable) || !isSet(earlier[0]) ? [variable, earlier[0]] : [earlier[0], variable];
    if (!blamed.has(culprit)) blamed.set(culprit, `${culprit}: must differ from ${other} (both "${name}")`);
  }
  return variables.flatMap((variable) => blamed.get(variable) ?? []);
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
