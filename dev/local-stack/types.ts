// The shapes the local stack hands out: which services, where they came from, and how to stop them.

export const SERVICE_NAMES = ['kafka', 'registry', 'redis', 'postgres'] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

/** Where a service came from: the environment, a container, a process started here, one already running, or nowhere. */
export type ServiceSource = 'env' | 'testcontainers' | 'process' | 'existing' | 'unavailable';

/** One progress line for a human; the default writes it to stderr. */
export type Log = (line: string) => void;

export interface LocalStackOptions {
  /** Services to provide; all four when absent. */
  readonly services?: readonly ServiceName[];
  /** Progress lines ("local stack: kafka from local process on 127.0.0.1:PORT (cached jars)"); stderr by default. */
  readonly log?: Log;
  /** Environment read for KAFKA_BROKERS, SCHEMA_REGISTRY_URL, REDIS_URL, DATABASE_URL and LOCAL_STACK_*; process.env by default. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** How long one service may take to answer after it was started or named, in ms; 120000 by default. */
  readonly readyTimeoutMs?: number;
}

export interface LocalStack {
  /** Bootstrap brokers (host:port); empty when Kafka was not requested. */
  readonly kafkaBrokers: string[];
  /** Confluent-compatible schema registry base URL (for Apicurio: <registry>/apis/ccompat/v7). */
  readonly schemaRegistryUrl?: string;
  readonly redisUrl?: string;
  /** PostgreSQL URL; absent when no server could be had (tests then use PGlite). */
  readonly databaseUrl?: string;
  readonly sources: Partial<Record<ServiceName, ServiceSource>>;
  /** Stops everything this stack started; services it found running are left alone. Safe to call twice. */
  stop(): Promise<void>;
}

/** One provided service: its endpoint, where it came from, and how to stop what was started for it. */
export interface ProvidedService {
  readonly endpoint: string;
  readonly source: Exclude<ServiceSource, 'unavailable'>;
  /** Extra words for the progress line, e.g. "cached jars". */
  readonly note?: string;
  stop(): Promise<void>;
}

/** What the per-service starters share: where to keep cached downloads and per-run files, and how to report. */
export interface StartContext {
  readonly cacheDir: string;
  /** A fresh directory for this run's configs, data and logs; removed when the stack stops cleanly. */
  readonly runDir: string;
  readonly log: Log;
  readonly readyTimeoutMs: number;
}
