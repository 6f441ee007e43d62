// Prometheus gauges for the Kafka pipeline, read at scrape time: consumer lag and whether the consumer is ready.
import { Gauge, type Registry } from 'prom-client';
import type { KafkaPipeline } from './index.ts';

export function registerKafkaMetrics(registry: Registry, pipeline: Pick<KafkaPipeline, 'lag' | 'state'>): void {
  new Gauge({
    name: 'rules_kafka_consumer_lag',
    help: 'Messages on the facts topic the consumer group has not committed yet.',
    registers: [registry],
    async collect() {
      // A broker that cannot be asked leaves the gauge out rather than reporting a false 0.
      try {
        this.set(await pipeline.lag());
      } catch {
        this.remove();
      }
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
