import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseApiKeys, parseByteSize, parseDuration } from '../../../src/config.ts';

function configError(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).message;
  }
  throw new Error('expected loadConfig to throw');
}

describe('loadConfig', () => {
  it('gives every variable its documented default on an empty environment', () => {
    const config = loadConfig({});
    expect(config.http).toEqual({
      port: 8080,
      host: '0.0.0.0',
      bodyLimit: 1_048_576,
      bulkMax: 10_000,
      executionBacklogMax: 1_000_000,
      apiKeys: null,
      metrics: 'off',
    });
    expect(config.storage).toEqual({ databaseUrl: undefined, dataDir: './data' });
    expect(config.executions).toEqual({ retentionMs: 7 * 86_400_000, cleanupIntervalMs: 3_600_000 });
    expect(config.log.level).toBe('info');
    expect(config.kafka).toEqual({
      brokers: [],
      factsTopic: 'rules.facts',
      resultsTopic: 'rules.results',
      dlqTopic: 'rules.facts.dlq',
      changelogTopic: 'rules.changelog',
      groupId: 'rules-evaluator',
      exactlyOnce: false,
      streaming: false,
      recordExecutions: true,
      partitions: 3,
      maxResultBytes: 1_000_000,
      schemaRegistryUrl: undefined,
    });
    expect(config.redis).toEqual({ url: undefined, commandTimeoutMs: 5_000, keyPrefix: 'rules:' });
    expect(config.sessions.maxFacts).toBe(10_000);
    expect(config.sessions.maxBytes).toBe(64 * 1_048_576);
    expect(config.sessions.cacheFacts).toBe(100_000);
    expect(config.sessions.timestampField).toBe('timestamp');
    expect(config.sessions.streamingTtlSeconds).toBe(3_600);
    expect(config.shutdownTimeoutMs).toBe(30_000);
  });

  it('reads every variable that is set', () => {
    const config = loadConfig({
      PORT: '9000',
      HOST: '127.0.0.1',
      DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/test',
      RULES_DATA_DIR: '/var/lib/rules',
      RULES_LOG_LEVEL: 'DEBUG',
      RULES_BODY_LIMIT: '2mb',
      RULES_BULK_MAX: '500',
      RULES_EXECUTION_BACKLOG_MAX: '5000',
      RULES_EXECUTION_RETENTION: '12h',
      RULES_EXECUTION_CLEANUP_INTERVAL: '300',
      RULES_SHUTDOWN_TIMEOUT: '5s',
      RULES_API_KEYS: 'ops=k1:admin,k2:evaluate',
      RULES_METRICS: 'Prometheus',
      KAFKA_BROKERS: 'kafka-1:9092, kafka-2:9092',
      KAFKA_FACTS_TOPIC: 'in',
      KAFKA_RESULTS_TOPIC: 'out',
      KAFKA_DLQ_TOPIC: 'dead',
      KAFKA_CHANGELOG_TOPIC: 'rule-changes',
      KAFKA_GROUP_ID: 'group',
      KAFKA_EXACTLY_ONCE: ' true ',
      KAFKA_STREAMING: 'yes',
      KAFKA_STREAMING_SESSION_TTL: '2d',
      KAFKA_RECORD_EXECUTIONS: 'false',
      KAFKA_PARTITIONS: '12',
      KAFKA_MAX_RESULT_BYTES: '2000000',
      SCHEMA_REGISTRY_URL: 'http://registry:8081',
      REDIS_URL: 'redis://127.0.0.1:6379',
      REDIS_COMMAND_TIMEOUT: '750ms',
      REDIS_KEY_PREFIX: ' team-a: ',
      RULES_SESSION_MAX_FACTS: '50',
      RULES_SESSION_MAX_BYTES: '512kb',
      RULES_SESSION_CACHE_FACTS: '0',
      RULES_SESSION_TIMESTAMP_FIELD: ' meta.occurred_at ',
    });
    expect(config.http).toEqual({
      port: 9000,
      host: '127.0.0.1',
      bodyLimit: 2_097_152,
      bulkMax: 500,
      executionBacklogMax: 5_000,
      apiKeys: [
        { name: 'ops', key: 'k1', scope: 'admin' },
        { name: 'key-2', key: 'k2', scope: 'evaluate' },
      ],
      metrics: 'prometheus',
    });
    expect(config.storage).toEqual({ databaseUrl: 'postgres://postgres@127.0.0.1:5432/test', dataDir: '/var/lib/rules' });
    expect(config.executions).toEqual({ retentionMs: 43_200_000, cleanupIntervalMs: 300_000 });
    expect(config.log.level).toBe('debug');
    expect(config.kafka).toEqual({
      brokers: ['kafka-1:9092', 'kafka-2:9092'],
      factsTopic: 'in',
      resultsTopic: 'out',
      dlqTopic: 'dead',
      changelogTopic: 'rule-changes',
      groupId: 'group',
      exactlyOnce: true,
      streaming: true,
      recordExecutions: false,
      partitions: 12,
      maxResultBytes: 2_000_000,
      schemaRegistryUrl: 'http://registry:8081',
    });
    expect(config.redis).toEqual({ url: 'redis://127.0.0.1:6379', commandTimeoutMs: 750, keyPrefix: 'team-a:' });
    expect(config.sessions.maxFacts).toBe(50);
    expect(config.sessions.maxBytes).toBe(524_288);
    expect(config.sessions.cacheFacts).toBe(0);
    expect(config.sessions.timestampField).toBe('meta.occurred_at');
    expect(config.sessions.streamingTtlSeconds).toBe(172_800);
    expect(config.shutdownTimeoutMs).toBe(5_000);
  });

  it('takes a host name or any IP address for HOST', () => {
    for (const host of ['0.0.0.0', '::', '127.0.0.1', '::1', 'localhost', 'api-1.example.com', 'fe80::1%eth0']) {
      expect(loadConfig({ HOST: host }).http.host, host).toBe(host);
    }
  });

  it('treats an empty variable as unset', () => {
    expect(loadConfig({ PORT: '', RULES_API_KEYS: ' ' }).http).toMatchObject({ port: 8080, apiKeys: null });
  });

  it('accepts WARNING as warn', () => {
    expect(loadConfig({ RULES_LOG_LEVEL: 'WARNING' }).log.level).toBe('warn');
  });

  it('returns a deeply frozen object', () => {
    const config = loadConfig({ RULES_API_KEYS: 'k1:admin' });
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.http)).toBe(true);
    expect(Object.isFrozen(config.http.apiKeys)).toBe(true);
    expect(Object.isFrozen(config.kafka.brokers)).toBe(true);
  });

  it.each([
    ['PORT', 'abc', 'PORT: must be a whole number (got "abc")'],
    ['PORT', '70000', 'PORT: must be at most 65535'],
    ['RULES_BULK_MAX', '0', 'RULES_BULK_MAX: must be at least 1'],
    ['RULES_LOG_LEVEL', 'loud', 'RULES_LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent'],
    ['RULES_BODY_LIMIT', 'huge', 'RULES_BODY_LIMIT: must be a size from 1kb to 256mb'],
    ['RULES_BODY_LIMIT', '10', 'RULES_BODY_LIMIT: must be a size from 1kb to 256mb'],
    ['RULES_SESSION_MAX_BYTES', '300mb', 'RULES_SESSION_MAX_BYTES: must be a size from 1kb to 256mb'],
    ['RULES_SESSION_MAX_BYTES', 'lots', 'RULES_SESSION_MAX_BYTES: must be a size from 1kb to 256mb'],
    ['RULES_EXECUTION_RETENTION', '7 years', 'RULES_EXECUTION_RETENTION: must be a positive duration'],
    ['RULES_EXECUTION_RETENTION', '0', 'RULES_EXECUTION_RETENTION: must be a positive duration'],
    // A Node timer longer than ~24.8 days fires after 1 ms: retention would run back to back.
    ['RULES_EXECUTION_CLEANUP_INTERVAL', '30d', 'RULES_EXECUTION_CLEANUP_INTERVAL: must be at most 2147483 seconds'],
    ['RULES_SHUTDOWN_TIMEOUT', '25d', 'RULES_SHUTDOWN_TIMEOUT: must be at most 2147483 seconds'],
    ['REDIS_COMMAND_TIMEOUT', '0s', 'REDIS_COMMAND_TIMEOUT: must be a positive duration'],
    // A brace would take the hash tag's place in Redis Cluster: one session's keys would spread over slots.
    ['REDIS_KEY_PREFIX', 'team{a}:', "REDIS_KEY_PREFIX: must be 1 to 64 letters, digits, '.', '_', ':' or '-'"],
    ['REDIS_KEY_PREFIX', 'x'.repeat(65), "REDIS_KEY_PREFIX: must be 1 to 64 letters, digits, '.', '_', ':' or '-'"],
    ['KAFKA_STREAMING_SESSION_TTL', '8d', 'KAFKA_STREAMING_SESSION_TTL: must be at most 604800 seconds: sessions live at most 7 days'],
    ['KAFKA_STREAMING_SESSION_TTL', '500ms', 'KAFKA_STREAMING_SESSION_TTL: must be at least 1000 ms'],
    // Minutes or months? Refused rather than guessed.
    ['RULES_EXECUTION_RETENTION', '1M', 'RULES_EXECUTION_RETENTION: must be a positive duration'],
    ['RULES_EXECUTION_CLEANUP_INTERVAL', '1ms', 'RULES_EXECUTION_CLEANUP_INTERVAL: must be at least 1000 ms'],
    // V8 cannot hold a body that large as one string: the parser crashed the process.
    ['RULES_BODY_LIMIT', '1024mb', 'RULES_BODY_LIMIT: must be a size from 1kb to 256mb'],
    ['REDIS_URL', 'redis://', 'REDIS_URL: must name a host'],
    ['REDIS_URL', 'redis:', 'REDIS_URL: must name a host'],
    ['DATABASE_URL', 'postgres:', 'DATABASE_URL: must name a host'],
    ['DATABASE_URL', 'postgres:///db', 'DATABASE_URL: must name a host'],
    ['SCHEMA_REGISTRY_URL', 'http://', 'SCHEMA_REGISTRY_URL: must be a URL with a valid host and port, e.g. http://registry:8080'],
    ['KAFKA_DLQ_TOPIC', 'my topic!', 'KAFKA_DLQ_TOPIC: must be a Kafka topic name'],
    ['KAFKA_RESULTS_TOPIC', '..', "KAFKA_RESULTS_TOPIC: must be a Kafka topic name other than '.' or '..'"],
    // A cutoff that far back is no date at all: every cleanup would fail.
    ['RULES_EXECUTION_RETENTION', '999999999999999d', 'RULES_EXECUTION_RETENTION: must be at most 3153600000 seconds'],
    ['RULES_BODY_LIMIT', '99999999999999999999999mb', 'RULES_BODY_LIMIT: must be a size from 1kb to 256mb'],
    ['RULES_METRICS', 'otel', 'RULES_METRICS: must be off or prometheus'],
    ['RULES_API_KEYS', 'k1:root', 'RULES_API_KEYS: entry 1 has no valid scope after its last colon'],
    // A key Authorization: Bearer cannot carry (a space), or that a client sends as other bytes than the variable holds.
    ['RULES_API_KEYS', 'ops=a b:admin', 'RULES_API_KEYS: entry 1 has a key with a space or a character outside printable ASCII'],
    [
      'RULES_API_KEYS',
      'ok=k1:admin,u=clé:evaluate',
      'RULES_API_KEYS: entry 2 has a key with a space or a character outside printable ASCII',
    ],
    ['KAFKA_BROKERS', 'localhost', 'KAFKA_BROKERS: "localhost" must be host:port'],
    ['KAFKA_BROKERS', 'localhost:99999', 'KAFKA_BROKERS: "localhost:99999" must be host:port (a port from 1 to 65535)'],
    ['KAFKA_BROKERS', 'a:9092,b:0', 'KAFKA_BROKERS: "b:0" must be host:port'],
    ['HOST', 'not a host!!', 'HOST: must be a host name or an IP address'],
    ['HOST', '[::1]', 'HOST: must be a host name or an IP address (IPv6 without brackets)'],
    ['KAFKA_EXACTLY_ONCE', 'maybe', 'KAFKA_EXACTLY_ONCE: must be one of true, 1, yes, on, false, 0, no, off (got "maybe")'],
    // Only the words documented: zod's own list takes y/n and enabled/disabled too.
    ['KAFKA_STREAMING', 'y', 'KAFKA_STREAMING: must be one of true, 1, yes, on, false, 0, no, off (got "y")'],
    ['KAFKA_PARTITIONS', '-1', 'KAFKA_PARTITIONS: must be a whole number'],
    ['RULES_SESSION_CACHE_FACTS', '-1', 'RULES_SESSION_CACHE_FACTS: must be a whole number'],
    ['RULES_SESSION_CACHE_FACTS', 'lots', 'RULES_SESSION_CACHE_FACTS: must be a whole number (got "lots")'],
    ['DATABASE_URL', 'mysql://db/x', 'DATABASE_URL: must be a URL of the form postgres://db:5432/rules'],
    ['REDIS_URL', 'not a url', 'REDIS_URL: must be a URL with a valid host and port, e.g. redis://cache:6379'],
    ['SCHEMA_REGISTRY_URL', 'ftp://registry', 'SCHEMA_REGISTRY_URL: must be a URL of the form http://registry:8080'],
    // A database that is not a number made ioredis select NaN, and the process fail after start-up.
    ['REDIS_URL', 'redis://127.0.0.1:6379/abc', 'REDIS_URL: must name its database by number, if at all'],
    // ioredis reads the database from a `db` parameter too: `?db=abc` crashed the process after start-up.
    ['REDIS_URL', 'redis://127.0.0.1:6379?db=abc', 'REDIS_URL: must name its database by number, if at all'],
    ['REDIS_URL', 'redis://127.0.0.1:6379/1?db=x5', 'REDIS_URL: must name its database by number, if at all'],
    ['HOST', '999.1.1.1', 'HOST: must be a host name or an IP address'],
    [
      'DATABASE_URL',
      'postgresql://postgres@/test?host=/run/postgresql',
      'a socket directory as postgresql:///rules?host=/run/postgresql&user=me',
    ],
    ['HOST', '-', 'HOST: must be a host name or an IP address'],
    ['HOST', ':::', 'HOST: must be a host name or an IP address'],
    ['RULES_SHUTDOWN_TIMEOUT', '1ms', 'RULES_SHUTDOWN_TIMEOUT: must be at least 1000 ms'],
    ['REDIS_COMMAND_TIMEOUT', '1ms', 'REDIS_COMMAND_TIMEOUT: must be at least 100 ms'],
    ['KAFKA_BROKERS', ' , ', 'KAFKA_BROKERS: must list host:port brokers, or be unset'],
  ])('rejects %s=%s with a message naming the variable', (variable, value, expected) => {
    expect(configError({ [variable]: value })).toContain(expected);
  });

  it.each([
    ['PORT', '99999999999999999999', 'PORT: must be at most 65535'],
    ['DATABASE_URL', 'db.example.com:5432/rules', 'DATABASE_URL: must be a URL of the form postgres://db:5432/rules'],
    ['REDIS_URL', 'redis://:pw@', 'REDIS_URL: must be a URL with a valid host and port, e.g. redis://cache:6379'],
    ['KAFKA_BROKERS', 'kafka1,kafka2:0,kafka3:9092', 'KAFKA_BROKERS: "kafka1" must be host:port (a port from 1 to 65535)'],
  ])('says one thing of %s=%s, the first rule it breaks', (variable, value, expected) => {
    const lines = configError({ [variable]: value })
      .split('\n')
      .filter((line) => line.includes(`${variable}:`));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(expected);
  });

  it('never echoes part of an API key, even one whose scope was forgotten after a colon inside it', () => {
    expect(configError({ RULES_API_KEYS: 'ops=9f2c:77ab03e1aa5d' })).not.toMatch(/77ab|9f2c/);
  });

  it.each([
    [{ KAFKA_DLQ_TOPIC: 'rules.facts' }, 'KAFKA_DLQ_TOPIC: must differ from KAFKA_FACTS_TOPIC (both "rules.facts")'],
    [{ KAFKA_FACTS_TOPIC: 'x', KAFKA_RESULTS_TOPIC: 'x' }, 'KAFKA_RESULTS_TOPIC: must differ from KAFKA_FACTS_TOPIC (both "x")'],
    [{ KAFKA_RESULTS_TOPIC: 'rules.changelog' }, 'KAFKA_RESULTS_TOPIC: must differ from KAFKA_CHANGELOG_TOPIC (both "rules.changelog")'],
    // Reported on the variable that was set, not on the default it met.
    [{ KAFKA_CHANGELOG_TOPIC: 'rules.facts' }, 'KAFKA_CHANGELOG_TOPIC: must differ from KAFKA_FACTS_TOPIC (both "rules.facts")'],
  ])('refuses one topic for two roles: %o', (env, expected) => {
    expect(configError(env)).toContain(expected);
  });

  it.each(['localhost', 'rules_api', 'my-host.example.com.', '0.0.0.0', '::', '::ffff:127.0.0.1', 'fe80::1%eth0'])(
    'accepts HOST=%s, a name or address the server can bind',
    (host) => {
      expect(loadConfig({ HOST: host }).http.host).toBe(host);
    },
  );

  it('accepts a PostgreSQL URL naming a socket directory instead of a host, or leaving the host to PGHOST', () => {
    const url = 'postgresql:///rules?host=/var/run/postgresql';
    expect(loadConfig({ DATABASE_URL: url }).storage.databaseUrl).toBe(url);
    expect(loadConfig({ DATABASE_URL: 'postgres:///rules', PGHOST: '/run/postgresql' }).storage.databaseUrl).toBe('postgres:///rules');
  });

  it('accepts a Redis database given as a number in the path or the db parameter', () => {
    expect(loadConfig({ REDIS_URL: 'redis://cache:6379?db=2' }).redis.url).toBe('redis://cache:6379?db=2');
    expect(loadConfig({ REDIS_URL: 'redis://cache:6379/3' }).redis.url).toBe('redis://cache:6379/3');
  });

  it('names a clash between variables beside a variable that is bad on its own, and every clash', () => {
    const lines = configError({
      PORT: 'eighty',
      KAFKA_FACTS_TOPIC: 'rules.changelog',
      KAFKA_RESULTS_TOPIC: 'out',
      KAFKA_DLQ_TOPIC: 'out',
      DATABASE_URL: 'postgresql:///rules',
    }).split('\n');
    expect(lines).toEqual([
      'Invalid configuration:',
      '  PORT: must be a whole number (got "eighty")',
      '  KAFKA_FACTS_TOPIC: must differ from KAFKA_CHANGELOG_TOPIC (both "rules.changelog")',
      '  KAFKA_DLQ_TOPIC: must differ from KAFKA_RESULTS_TOPIC (both "out")',
      '  DATABASE_URL: must name a host, e.g. postgres://db:5432/rules (or a socket directory with ?host=, or set PGHOST)',
    ]);
  });

  it('names every bad variable at once', () => {
    const message = configError({ PORT: 'x', RULES_BULK_MAX: 'y' });
    expect(message).toContain('PORT:');
    expect(message).toContain('RULES_BULK_MAX:');
  });

  it('never echoes a secret back in the message', () => {
    const message = configError({ RULES_API_KEYS: 'secret-key:root', DATABASE_URL: 'mysql://user:password@db' });
    expect(message).not.toContain('secret-key');
    expect(message).not.toContain('password');
  });
});

describe('parseDuration', () => {
  it.each([
    ['7d', 604_800_000],
    ['12h', 43_200_000],
    ['30m', 1_800_000],
    ['45s', 45_000],
    ['250ms', 250],
    ['60', 60_000],
    ['1w', 604_800_000],
    ['1.5h', 5_400_000],
    [' 2D ', 172_800_000],
  ])('reads %s as %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['', 'd', '7 years', '-1d', '1e3'])('rejects %j', (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });
});

describe('parseByteSize', () => {
  it.each([
    ['1048576', 1_048_576],
    ['512kb', 524_288],
    ['1mb', 1_048_576],
    ['1MiB', 1_048_576],
  ])('reads %s as %d bytes', (text, bytes) => {
    expect(parseByteSize(text)).toBe(bytes);
  });

  it.each(['', 'mb', '1gb', '1.5mb'])('rejects %j', (text) => {
    expect(parseByteSize(text)).toBeUndefined();
  });
});

describe('parseApiKeys', () => {
  it('names keys by position unless a name is given', () => {
    expect(parseApiKeys('k1:admin, ci=k2:evaluate')).toEqual({
      keys: [
        { name: 'key-1', key: 'k1', scope: 'admin' },
        { name: 'ci', key: 'k2', scope: 'evaluate' },
      ],
    });
  });

  it('keeps colons and equals signs inside a named key', () => {
    expect(parseApiKeys('ops=a:b==:admin')).toEqual({ keys: [{ name: 'ops', key: 'a:b==', scope: 'admin' }] });
  });

  it.each([
    [',', 'must list at least one'],
    ['k1', 'entry 1 must be [name=]key:scope'],
    [':admin', 'entry 1 has an empty key'],
    ['=k1:admin', 'entry 1 has an empty name'],
    ['k1:admin,k1:evaluate', 'entry 2 repeats a key'],
    ['a=k1:admin,a=k2:evaluate', 'entry 2 repeats the name "a"'],
    ['k1:Admin', 'entry 1 has no valid scope after its last colon; expected one of admin, evaluate'],
    ['dGVzdA==:admin', 'entry 1 has a key that starts with "="; a key containing "=" needs a name'],
  ])('rejects %j', (text, problem) => {
    const parsed = parseApiKeys(text);
    expect(parsed).toHaveProperty('problem');
    expect((parsed as { problem: string }).problem).toContain(problem);
  });
});
