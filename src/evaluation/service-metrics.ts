// The process's Prometheus registry: evaluations and fired rules from every transport, plus the engine collector's signals.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { EvaluationResult } from '../contracts/evaluation.ts';
import type { EngineMetrics } from '../engine/index.ts';
import type { ExecutionSource } from './evaluator.ts';

/** Evaluation latency buckets in milliseconds: the engine answers in microseconds to a few milliseconds. */
const LATENCY_BUCKETS_MS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100];

export interface ServiceMetricsOptions {
  engineMetrics?: EngineMetrics;
  /** The current engine's revision and size, read at scrape time. */
  engine?: () => { revision: number; size: number };
}

export class ServiceMetrics {
  readonly registry = new Registry();
  #processMetrics = false;
  readonly #evaluations: Counter<'source'>;
  readonly #rulesFired: Counter<'source'>;
  readonly #latency: Histogram<'source'>;

  constructor(options: ServiceMetricsOptions = {}) {
    const registers = [this.registry];
    this.#evaluations = new Counter({ name: 'rules_evaluations_total', help: 'Facts evaluated.', labelNames: ['source'], registers });
    this.#rulesFired = new Counter({
      name: 'rules_fired_total',
      help: 'Rules fired, summed over evaluations.',
      labelNames: ['source'],
      registers,
    });
    this.#latency = new Histogram({
      name: 'rules_evaluation_latency_ms',
      help: 'Engine time per evaluated fact, in milliseconds.',
      labelNames: ['source'],
      buckets: LATENCY_BUCKETS_MS,
      registers,
    });
    const { engine, engineMetrics } = options;
    if (engine !== undefined) {
      gauge(registers, 'rules_engine_revision', 'Rules revision the engine was compiled from.', () => engine().revision);
      gauge(registers, 'rules_engine_rules', 'Rules in the compiled engine, enabled or not.', () => engine().size);
    }
    if (engineMetrics !== undefined) {
      const signal = (name: string, help: string, read: (s: ReturnType<EngineMetrics['snapshot']>) => number | null) =>
        gauge(registers, name, help, () => read(engineMetrics.snapshot()));
      signal(
        'rules_engine_candidates_per_fact_out',
        'Candidate rules per fact, not ruled out by the index.',
        (s) => s.candidates_per_fact_out,
      );
      signal('rules_engine_alpha_prune_ratio', 'Share of rules in scope ruled out by the index.', (s) => s.alpha_prune_ratio);
      signal('rules_engine_eval_latency_ms_p95', '95th percentile of recent evaluation latencies (ms).', (s) => s.eval_latency_ms_p95);
      signal('rules_engine_linked_rules_avg', 'Average rules linked to each indexed test.', (s) => s.linked_rules_avg);
      signal('rules_engine_working_memory_size', 'Facts in sessions written here in the last hour.', (s) => s.working_memory_size);
      signal('rules_engine_node_memory_hit_rate', 'Share of session writes whose fired set did not change.', (s) => s.node_memory.hit_rate);
    }
  }
  /**
   * prom-client's process and Node.js series (resident memory, heap, event-loop lag, GC, open handles), once: only when
   * metrics are served, since the event-loop lag monitor runs continuously.
   */
  collectProcessMetrics(): void {
    if (this.#processMetrics) return;
    this.#processMetrics = true;
    collectDefaultMetrics({ register: this.registry });
  }

  /** An EvaluationObserver: counts one evaluated fact. */
  readonly observe = (source: ExecutionSource, result: EvaluationResult): void => {
    this.#evaluations.inc({ source });
    if (result.fired_rules.length > 0) this.#rulesFired.inc({ source }, result.fired_rules.length);
    this.#latency.observe({ source }, result.latency_ms);
  };

  /** The Prometheus text exposition of every metric. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

function gauge(registers: Registry[], name: string, help: string, read: () => number | null): void {
  new Gauge({
    name,
    help,
    registers,
    collect() {
      const value = read();
      // An unset signal is left out rather than reported as 0.
      if (value === null) this.remove();
      else this.set(value);
    },
  });
}
