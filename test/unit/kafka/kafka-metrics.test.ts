import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { KafkaPipelineState } from '../../../src/kafka/index.ts';
import { registerKafkaMetrics } from '../../../src/kafka/kafka-metrics.ts';

const state = { ready: true, assigned_partitions: [0, 2] } as unknown as KafkaPipelineState;

describe('registerKafkaMetrics', () => {
  it('reports the lag, readiness and assigned partitions at scrape time', async () => {
    const registry = new Registry();
    registerKafkaMetrics(registry, { lag: async () => 42, state: () => state });
    const text = await registry.metrics();
    expect(text).toMatch(/^rules_kafka_consumer_lag 42$/m);
    expect(text).toMatch(/^rules_kafka_consumer_ready 1$/m);
    expect(text).toMatch(/^rules_kafka_assigned_partitions 2$/m);
  });

  it('leaves the lag out, instead of a false 0, while the broker cannot be asked', async () => {
    const registry = new Registry();
    let lag: number | undefined = 7;
    registerKafkaMetrics(registry, {
      lag: async () => {
        if (lag === undefined) throw new Error('broker unreachable');
        return lag;
      },
      state: () => state,
    });
    expect(await registry.metrics()).toMatch(/^rules_kafka_consumer_lag 7$/m);
    lag = undefined;
    const text = await registry.metrics();
    expect(text).toContain('# TYPE rules_kafka_consumer_lag gauge');
    expect(text).not.toMatch(/^rules_kafka_consumer_lag /m);
  });

  it('leaves the lag out after its time limit when the broker is slow, and still answers with the other metrics', async () => {
    const registry = new Registry();
    registerKafkaMetrics(registry, { lag: () => new Promise<number>(() => undefined), state: () => state }, 50);
    const text = await registry.metrics();
    expect(text).not.toMatch(/^rules_kafka_consumer_lag /m);
    expect(text).toMatch(/^rules_kafka_consumer_ready 1$/m);
  });
});
