import { describe, expect, it } from 'vitest';
import { devBrokers } from '../../../dev/endpoints-file.ts';
import { requestedPort, withoutEndpoints } from '../../../dev/service-env.ts';

describe('what npm run dev hands the service', () => {
  it.each([
    [undefined, undefined],
    ['', undefined],
    ['0', 0],
    [' 8081 ', 8081],
  ])('reads PORT=%s as %s', (given, expected) => {
    expect(requestedPort(given)).toBe(expected);
  });

  it.each(['eighty', '-1', '65536', '80.5', '0x50'])('refuses PORT=%s naming the value given', (given) => {
    expect(() => requestedPort(given)).toThrow(`PORT must be a whole number from 0 to 65535 (got "${given}")`);
  });

  it('leaves out the endpoints of services the stack did not bring up, and keeps the rest of the environment', () => {
    const env = {
      KAFKA_BROKERS: 'b:9092',
      SCHEMA_REGISTRY_URL: 'http://r',
      REDIS_URL: 'redis://c',
      DATABASE_URL: 'postgres://d/x',
      RULES_LOG_LEVEL: 'debug',
    };
    expect(withoutEndpoints(env)).toEqual({ RULES_LOG_LEVEL: 'debug' });
    expect(env.KAFKA_BROKERS).toBe('b:9092');
  });
});

describe('the brokers dev/produce.ts and dev/consume.ts use', () => {
  it('refuses a malformed KAFKA_BROKERS at once, naming it', async () => {
    await expect(devBrokers({ KAFKA_BROKERS: 'notahost' })).rejects.toThrow(
      'KAFKA_BROKERS must be host:port[,host:port...]; "notahost" is not',
    );
  });

  it('takes a list of brokers, spaces around the commas allowed', async () => {
    await expect(devBrokers({ KAFKA_BROKERS: 'a:9092, b:9093' })).resolves.toEqual(['a:9092', 'b:9093']);
  });
});
