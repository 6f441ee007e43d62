// How tests reach the local stack: typed endpoints from the global setup, unique names, and cleanup they never forget.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { type Admin, Kafka, type KafkaConfig, logLevel } from 'kafkajs';
import pg from 'pg';
import { afterAll, inject } from 'vitest';

/** What test/global-setup.ts provides to every integration test file. */
export interface StackEndpoints {
  readonly kafkaBrokers: readonly string[];
  readonly schemaRegistryUrl: string | undefined;
  readonly redisUrl: string | undefined;
  readonly databaseUrl: string | undefined;
  readonly sources: Readonly<Record<string, string>>;
}

declare module 'vitest' {
  export interface ProvidedContext {
    stack: StackEndpoints;
  }
}

/** The endpoints of the running stack; only integration tests (the project with the global setup) have them. */
export function stackEndpoints(): StackEndpoints {
  const stack = inject('stack');
  if (stack === undefined) throw new Error('no local stack: this helper only works in test/integration (vitest project "integration")');
  return stack;
}

/** A name no other test (or test run) uses: `<prefix>-<uuid>`. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${randomUUID()}`;
}

export interface TopicOptions {
  readonly partitions?: number;
  /** Topic-level configs, e.g. { 'cleanup.policy': 'compact' }. */
  readonly configs?: Readonly<Record<string, string>>;
  /** Readable prefix before the uuid; "topic" by default. */
  readonly prefix?: string;
}

/**
 * Per-file factory of stack resources. Every topic, group and key prefix it hands out is unique, and everything it
 * created is removed after the file's tests (topics deleted, keys under its prefixes deleted, schemas dropped).
 */
export class StackResources {
  readonly endpoints: StackEndpoints;
  readonly #topics: string[] = [];
  readonly #groups: string[] = [];
  readonly #keyPrefixes: string[] = [];
  readonly #schemas: string[] = [];
  #admin: Admin | undefined;
  #redis: Redis | undefined;

  constructor(endpoints: StackEndpoints = stackEndpoints()) {
    this.endpoints = endpoints;
  }

  get kafkaBrokers(): string[] {
    if (this.endpoints.kafkaBrokers.length === 0) throw new Error('the local stack has no Kafka (LOCAL_STACK_SERVICES leaves it out)');
    return [...this.endpoints.kafkaBrokers];
  }

  get schemaRegistryUrl(): string {
    return required(this.endpoints.schemaRegistryUrl, 'schema registry', 'registry');
  }

  get redisUrl(): string {
    return required(this.endpoints.redisUrl, 'Redis', 'redis');
  }

  /** PostgreSQL URL; throws when the stack has none (check `endpoints.databaseUrl` first to fall back to PGlite). */
  get databaseUrl(): string {
    return required(this.endpoints.databaseUrl, 'PostgreSQL', 'postgres');
  }

  /** A kafkajs client for the stack's brokers, quiet unless something is wrong. */
  kafka(config: Partial<KafkaConfig> = {}): Kafka {
    return new Kafka({ clientId: uniqueName('test'), brokers: this.kafkaBrokers, logLevel: logLevel.ERROR, ...config });
  }

  /** Creates a fresh topic and waits for its leaders; it is deleted after the file. */
  async topic(options: TopicOptions = {}): Promise<string> {
    const name = uniqueName(options.prefix ?? 'topic');
    const admin = await this.#kafkaAdmin();
    const configEntries = Object.entries(options.configs ?? {}).map(([name, value]) => ({ name, value }));
    await admin.createTopics({ waitForLeaders: true, topics: [{ topic: name, numPartitions: options.partitions ?? 1, configEntries }] });
    this.#topics.push(name);
    return name;
  }

  /** A unique consumer group id; the group is deleted after the file (once its consumers have left). */
  groupId(prefix = 'group'): string {
    const id = uniqueName(prefix);
    this.#groups.push(id);
    return id;
  }

  /** A unique transactional id for an exactly-once producer. */
  transactionalId(prefix = 'tx'): string {
    return uniqueName(prefix);
  }

  /** A unique Redis key prefix ending in ':'; every key under it is deleted after the file. */
  keyPrefix(prefix = 'test'): string {
    const keyPrefix = `${prefix}:${randomUUID()}:`;
    this.#keyPrefixes.push(keyPrefix);
    return keyPrefix;
  }

  /** A shared ioredis client for the stack's Redis, closed after the file. */
  redis(): Redis {
    this.#redis ??= new Redis(this.redisUrl, { lazyConnect: false, maxRetriesPerRequest: 2 });
    return this.#redis;
  }

  /** Creates a fresh PostgreSQL schema (name safe to interpolate: letters, digits, underscores); dropped after the file. */
  async pgSchema(prefix = 'test'): Promise<string> {
    const schema = `${prefix}_${randomUUID().replaceAll('-', '')}`;
    if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`schema prefix must be lower-case letters, digits or _: "${prefix}"`);
    await withPg(this.databaseUrl, (client) => client.query(`create schema "${schema}"`));
    this.#schemas.push(schema);
    return schema;
  }

  /** Removes everything this factory created; errors are collected and thrown together at the end. */
  async cleanup(): Promise<void> {
    const problems: unknown[] = [];
    const attempt = async (work: () => Promise<unknown>) => {
      try {
        await work();
      } catch (error) {
        problems.push(error);
      }
    };
    if (this.#admin !== undefined) {
      const admin = this.#admin;
      if (this.#topics.length > 0) await attempt(() => admin.deleteTopics({ topics: this.#topics.splice(0) }));
      if (this.#groups.length > 0) await attempt(() => deleteGroups(admin, this.#groups.splice(0)));
      await attempt(() => admin.disconnect());
      this.#admin = undefined;
    }
    if (this.#keyPrefixes.length > 0 || this.#redis !== undefined) {
      const redis = this.redis();
      for (const keyPrefix of this.#keyPrefixes.splice(0)) await attempt(() => deleteKeys(redis, keyPrefix));
      await attempt(() => redis.quit());
      this.#redis = undefined;
    }
    if (this.#schemas.length > 0) {
      const schemas = this.#schemas.splice(0);
      await attempt(() =>
        withPg(this.databaseUrl, (client) => client.query(schemas.map((schema) => `drop schema if exists "${schema}" cascade`).join(';'))),
      );
    }
    if (problems.length > 0) throw new AggregateError(problems, `test cleanup failed: ${problems.map(String).join('; ')}`);
  }

  async #kafkaAdmin(): Promise<Admin> {
    if (this.#admin === undefined) {
      const admin = this.kafka().admin();
      await admin.connect();
      this.#admin = admin;
    }
    return this.#admin;
  }
}

/** Call at the top of an integration test file: a StackResources whose cleanup runs after the file's tests. */
export function useStackResources(): StackResources {
  const resources = new StackResources();
  afterAll(() => resources.cleanup());
  return resources;
}

function required(value: string | undefined, what: string, service: string): string {
  if (value === undefined) throw new Error(`the local stack has no ${what} (service "${service}" is unavailable or left out)`);
  return value;
}

async function deleteGroups(admin: Admin, groupIds: string[]): Promise<void> {
  try {
    await admin.deleteGroups(groupIds);
  } catch (error) {
    // A group that never committed an offset is gone once its last member left: nothing to delete.
    const failures = (error as { groups?: { groupId: string; error?: { type?: string } }[] }).groups ?? [];
    const real = failures.filter((failure) => failure.error?.type !== 'GROUP_ID_NOT_FOUND');
    if (failures.length === 0 || real.length > 0) {
      throw new Error(`deleting consumer groups failed: ${JSON.stringify(real.length > 0 ? real : String(error))}`);
    }
  }
}

async function deleteKeys(redis: Redis, keyPrefix: string): Promise<void> {
  // Glob characters in the prefix are escaped so the pattern matches exactly this prefix.
  const pattern = `${keyPrefix.replaceAll(/[*?[\]\\]/g, '\\$&')}*`;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
    if (keys.length > 0) await redis.unlink(...keys);
    cursor = next;
  } while (cursor !== '0');
}

async function withPg<T>(databaseUrl: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}
