import { describe, expect, it } from 'vitest';
import { containersAllowed, endpointsFromEnv, redact, requestedServices } from '../../../../dev/local-stack/stack-environment.ts';

describe('endpointsFromEnv', () => {
  it('takes each requested service from its variable, trimmed', () => {
    const env = {
      KAFKA_BROKERS: ' kafka-1:9092, kafka-2:9092 ',
      SCHEMA_REGISTRY_URL: 'http://registry:8080/apis/ccompat/v7',
      REDIS_URL: 'redis://cache:6379',
      DATABASE_URL: 'postgresql://app:secret@db:5432/rules',
    };
    expect(endpointsFromEnv(env, ['kafka', 'registry', 'redis', 'postgres'])).toEqual({
      kafka: 'kafka-1:9092,kafka-2:9092',
      registry: 'http://registry:8080/apis/ccompat/v7',
      redis: 'redis://cache:6379',
      postgres: 'postgresql://app:secret@db:5432/rules',
    });
  });

  it('takes a TLS Redis (rediss://) as given, like the service does', () => {
    expect(endpointsFromEnv({ REDIS_URL: 'rediss://cache:6380' }, ['redis'])).toEqual({ redis: 'rediss://cache:6380' });
  });

  it('ignores variables of services that were not requested, and empty ones', () => {
    expect(endpointsFromEnv({ KAFKA_BROKERS: 'k:9092', REDIS_URL: '  ' }, ['redis', 'postgres'])).toEqual({});
  });

  it.each([
    [{ KAFKA_BROKERS: 'localhost' }, 'KAFKA_BROKERS must be host:port[,host:port...]; "localhost" is not'],
    [{ KAFKA_BROKERS: 'a:9092,,b:9092' }, 'KAFKA_BROKERS must be host:port[,host:port...]; "" is not'],
    [{ KAFKA_BROKERS: 'PLAINTEXT://a:9092' }, 'KAFKA_BROKERS must be host:port[,host:port...]; "PLAINTEXT://a:9092" is not'],
    [{ SCHEMA_REGISTRY_URL: 'registry:8080' }, 'SCHEMA_REGISTRY_URL must be a URL with scheme https?:; got "registry:8080"'],
    [{ REDIS_URL: 'http://cache:6379' }, 'REDIS_URL must be a URL with scheme rediss?:; got "http://cache:6379"'],
    [{ DATABASE_URL: 'mysql://u:pw@db/x' }, 'DATABASE_URL must be a URL with scheme postgres(ql)?:; got "mysql://u:***@db/x"'],
  ])('rejects %j with an error naming the variable', (env, message) => {
    expect(() => endpointsFromEnv(env, ['kafka', 'registry', 'redis', 'postgres'])).toThrow(message);
  });
});

describe('requestedServices', () => {
  it('is all four, in a fixed order, by default', () => {
    expect(requestedServices(undefined, {})).toEqual(['kafka', 'registry', 'redis', 'postgres']);
  });

  it('takes LOCAL_STACK_SERVICES when no option is given, and the option over it', () => {
    expect(requestedServices(undefined, { LOCAL_STACK_SERVICES: 'postgres, redis' })).toEqual(['redis', 'postgres']);
    expect(requestedServices(['kafka'], { LOCAL_STACK_SERVICES: 'redis' })).toEqual(['kafka']);
  });

  it('names unknown services and where they came from', () => {
    expect(() => requestedServices(undefined, { LOCAL_STACK_SERVICES: 'kafka,zookeeper' })).toThrow(
      'LOCAL_STACK_SERVICES names unknown service(s) "zookeeper"; known: kafka, registry, redis, postgres',
    );
    expect(() => requestedServices(['mongo'], {})).toThrow('services names unknown service(s) "mongo"');
  });
});

describe('containersAllowed', () => {
  it('is true unless LOCAL_STACK_CONTAINERS says no', () => {
    expect(containersAllowed({})).toBe(true);
    expect(containersAllowed({ LOCAL_STACK_CONTAINERS: 'true' })).toBe(true);
    for (const no of ['0', 'false', 'NO', 'never', 'off']) expect(containersAllowed({ LOCAL_STACK_CONTAINERS: no })).toBe(false);
  });
});

describe('redact', () => {
  it('hides the password of a URL and leaves everything else', () => {
    expect(redact('postgres://app:secret@db:5432/rules')).toBe('postgres://app:***@db:5432/rules');
    expect(redact('redis://127.0.0.1:6379')).toBe('redis://127.0.0.1:6379');
    expect(redact('kafka-1:9092,kafka-2:9092')).toBe('kafka-1:9092,kafka-2:9092');
  });
});
