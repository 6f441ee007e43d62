// The evaluate use case shared by HTTP (single and bulk) and Kafka: run the engine, record the execution off the hot path.
import type { EvaluationResult } from '../contracts/evaluation.ts';
import type { RuleEngine } from '../engine/index.ts';
import type { ExecutionRecord, ExecutionsRepository } from '../store/types.ts';
import { EventLoopTurns } from './event-loop-turns.ts';
import { newExecutionId } from './execution-id.ts';

export type Facts = Record<string, unknown>;

const ALL_DOMAINS = Object.freeze({});

const MILLIS = Array.from({ length: 1_000 }, (_, ms) => `${String(ms).padStart(3, '0')}Z`);
// Timestamps of one second share their date and time: formatting a Date costs more than an evaluation's bookkeeping.
let secondStart = Number.NaN;
let secondPrefix = '';

/** `new Date(ms).toISOString()` for a whole number of milliseconds, formatting the date once per second. */
export function isoTimestamp(ms: number): string {
  const millis = ms % 1_000;
  if (!(millis >= 0) || !Number.isInteger(millis)) return new Date(ms).toISOString();
  const second = ms - millis;
  if (second !== secondStart) {
    secondStart = second;
    // "2025-01-31T12:00:00.000Z" without "000Z".
    secondPrefix = new Date(second).toISOString().slice(0, -4);
  }
  return secondPrefix + MILLIS[millis];
}
export type ExecutionSource = ExecutionRecord['source'];

export interface EvaluationOutcome extends EvaluationResult {
  execution_id: string;
  revision: number;
}

/** Told about every evaluation, e.g. to count it in metrics. */
export type EvaluationObserver = (source: ExecutionSource, result: EvaluationResult) => void;

export interface EvaluatorOptions {
  catalog: { readonly engine: RuleEngine };
  executions: Pick<ExecutionsRepository, 'record'>;
  observer?: EvaluationObserver;
  /** Facts evaluated between yields to the event loop during a bulk call, so other requests keep being served. */
  bulkSliceSize?: number;
}

export interface EvaluateOptions {
  /** Only this domain's rules; every domain when absent. */
  domain?: string | undefined;
  source?: ExecutionSource;
  /** False: the outcome still has an execution id, but no execution record is written (e.g. Kafka results are the record). */
  record?: boolean;
  /**
   * The JSON text, as received, of an object whose `facts` are the facts (a Kafka message value): the record is then made
   * from it and the outcome's JSON instead of serializing the facts again.
   */
  requestJson?: string | undefined;
}

export class Evaluator {
  readonly #options: EvaluatorOptions;
  readonly #sliceSize: number;

  constructor(options: EvaluatorOptions) {
    this.#options = options;
    this.#sliceSize = options.bulkSliceSize ?? 256;
  }

  /** Evaluates one fact and records the execution (a synchronous hand-over; the store writes it in a later batch). */
  evaluate(facts: Facts, options: EvaluateOptions = {}): EvaluationOutcome {
    const source = options.source ?? 'http';
    if (options.requestJson !== undefined && options.record !== false) {
      return this.#recordedFromTexts(facts, options.domain, source, options.requestJson).outcome;
    }
    return this.#run(this.#options.catalog.engine, facts, options.domain, source, options.record ?? true);
  }

  /**
   * evaluate() for a caller that answers with the outcome as JSON: the outcome is serialized once, and the execution is
   * recorded from that text and `requestJson` (the JSON text, as received, of an object whose `facts` are the facts).
   */
  evaluateToJson(facts: Facts, options: { domain?: string | undefined; source?: ExecutionSource; requestJson: string }): string {
    return this.#recordedFromTexts(facts, options.domain, options.source ?? 'http', options.requestJson).json;
  }

  /** Evaluates many facts against one engine revision; results are in input order, each with its own execution id. */
  async bulk(facts: readonly Facts[], options: { domain?: string | undefined } = {}): Promise<EvaluationOutcome[]> {
    const engine = this.#options.catalog.engine;
    const results: EvaluationOutcome[] = new Array(facts.length);
    const turns = new EventLoopTurns(this.#sliceSize);
    for (let index = 0; index < facts.length; index++) {
      if (turns.due(index)) await turns.take();
      results[index] = this.#run(engine, facts[index]!, options.domain, 'bulk', true);
    }
    return results;
  }

  #run(engine: RuleEngine, facts: Facts, domain: string | undefined, source: ExecutionSource, record: boolean): EvaluationOutcome {
    const now = Date.now();
    const outcome = this.#outcome(engine, facts, domain, source, now);
    if (record) {
      // Written out rather than spread from outcome: a literal of known shape is cheaper on every request.
      this.#options.executions.record({
        execution_id: outcome.execution_id,
        fired_rules: outcome.fired_rules,
        actions: outcome.actions,
        latency_ms: outcome.latency_ms,
        revision: outcome.revision,
        source,
        domain: domain ?? null,
        facts,
        created_at: isoTimestamp(now),
      });
    }
    return outcome;
  }

  /** Evaluates and records the execution from `requestJson` and the outcome's JSON, made once and returned too. */
  #recordedFromTexts(
    facts: Facts,
    domain: string | undefined,
    source: ExecutionSource,
    requestJson: string,
  ): { outcome: EvaluationOutcome; json: string } {
    const now = Date.now();
    const outcome = this.#outcome(this.#options.catalog.engine, facts, domain, source, now);
    const json = JSON.stringify(outcome);
    this.#options.executions.record({
      execution_id: outcome.execution_id,
      source,
      domain: domain ?? null,
      createdMs: now,
      requestJson,
      outcomeJson: json,
    });
    return { outcome, json };
  }

  /** Runs the engine and tells the observer; the outcome's id carries `now`. */
  #outcome(engine: RuleEngine, facts: Facts, domain: string | undefined, source: ExecutionSource, now: number): EvaluationOutcome {
    const result = engine.evaluate(facts, domain === undefined ? ALL_DOMAINS : { domain });
    this.#options.observer?.(source, result);
    return {
      execution_id: newExecutionId(now),
      fired_rules: result.fired_rules,
      actions: result.actions,
      latency_ms: result.latency_ms,
      revision: engine.revision,
    };
  }
}
