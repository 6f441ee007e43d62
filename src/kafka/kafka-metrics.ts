// Prometheus gauges for the Kafka pipeline, read at scrape time: consumer lag and whether the consumer is ready.
import { Gauge, type Registry } from 'prom-client';
import { within } from '../within.ts';
import type { KafkaPipeline } from './index.ts';

/** Longest a scrape waits for the broker's offsets: a slow broker must not cost the whole scrape its other metrics. */
export const LAG_READ_TIMEOUT_MS = 2_000;

export function registerKafkaMetrics(
  registry: Registry,
  pipeline: Pick<KafkaPipeline, 'lag' | 'state'>,
  lagTimeoutMs: number = LAG_READ_TIMEOUT_MS,
): void {
  new Gauge({
    name: 'rules_kafka_consumer_lag',
    help: 'Messages on the facts topic the consumer group has not committed yet.',
    registers: [registry],
    async collect() {
      // A broker that cannot be asked, or not in time, leaves the gauge out rather than reporting a false 0.
      const lag = await within(pipeline.lag(), lagTimeoutMs).catch(() => undefined);
      if (lag === undefined) this.remove();
      else this.set(lag.value);
    },
  });
  new Gauge({
    name: 'rules_kafka_consumer_ready',
    help: '1 while the facts consumer is in its group and consuming, else 0.',
    registers: [registry],
    collect() {
      this.set(pipeline.state().ready ? 1 : 0);
    },
  });
  new Gauge({
    name: 'rules_kafka_assigned_partitions',
    help: 'Facts-topic partitions this instance owns.',
    registers: [registry],
    collect() {
      this.set(pipeline.state().assigned_partitions.length);
    },
  });
}
