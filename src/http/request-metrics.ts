// Request counts and latency histograms per route, into the service's Prometheus registry.
import type { FastifyInstance } from 'fastify';
import { Counter, Histogram } from 'prom-client';
import type { ServiceMetrics } from '../evaluation/service-metrics.ts';

const DURATION_BUCKETS_S = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** Counts a reply Fastify sent before routing (a bad URL, an over-long parameter), which skips the onResponse hook. */
export type CountUnrouted = (method: string, statusCode: number, seconds: number) => void;

export function registerRequestMetrics(app: FastifyInstance, metrics: ServiceMetrics): CountUnrouted {
  const labelNames = ['method', 'route', 'status_code'] as const;
  const registers = [metrics.registry];
  const requests = new Counter({ name: 'http_requests_total', help: 'HTTP requests answered.', labelNames, registers });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from receiving a request to sending its reply.',
    labelNames,
    buckets: DURATION_BUCKETS_S,
    registers,
  });
  // A callback hook: an async one costs a promise and a microtask on every request.
  app.addHook('onResponse', (request, reply, done) => {
    // The route template, never the raw URL, keeps the label set bounded.
    const labels = {
      method: request.method,
      route: request.is404 ? 'unmatched' : (request.routeOptions.url ?? 'unmatched'),
      status_code: reply.statusCode,
    };
    requests.inc(labels);
    duration.observe(labels, reply.elapsedTime / 1_000);
    done();
  });
  return (method, statusCode, seconds) => {
    const labels = { method, route: 'unmatched', status_code: statusCode };
    requests.inc(labels);
    duration.observe(labels, seconds);
  };
}
