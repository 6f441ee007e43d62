// Turns a run of input messages into result and dead-letter records, stopping at the first message that must be retried.
import type { Message } from 'kafkajs';
import type { FactMessage, SourcePosition } from '../contracts/kafka-messages.ts';
import type { RegistryDecoder } from './fact-codec.ts';
import { decodeFactValue } from './fact-codec.ts';
import { decideFailure } from './failure-policy.ts';
import { deadLetterRecord, type InputMessage, type KafkaEvaluation, resultRecord } from './result-message.ts';

/** Evaluates one decoded fact message through the evaluate use case (the one POST /api/v1/evaluate uses). */
export type EvaluateFactMessage = (message: FactMessage) => KafkaEvaluation | Promise<KafkaEvaluation>;

export interface ProcessedRun {
  results: Message[];
  deadLetters: Message[];
  /** Offset of the last message answered (result or dead letter), or undefined when none was. */
  lastHandledOffset: string | undefined;
  /** The first message that failed transiently: it and everything after it are left for redelivery. */
  retry: { offset: string; attempt: number; reason: string } | undefined;
}

export interface BatchProcessorOptions {
  decoder: RegistryDecoder | undefined;
  evaluate: EvaluateFactMessage;
  /** Unexpected (uncoded) failures of one message are retried this many times before it is dead-lettered. */
  maxUnexpectedAttempts: number;
}

type Outcome = { ok: true; evaluation: KafkaEvaluation } | { ok: false; error: unknown };

export class BatchProcessor {
  readonly #options: BatchProcessorOptions;
  // Failed attempts per message still awaiting redelivery, keyed topic/partition/offset.
  readonly #attempts = new Map<string, number>();

  constructor(options: BatchProcessorOptions) {
    this.#options = options;
  }

  async process(topic: string, partition: number, messages: readonly InputMessage[]): Promise<ProcessedRun> {
    // JSON facts decode and evaluate synchronously; only registry lookups (or an async evaluator) leave promises to wait for.
    const pending = messages.map((message) => this.#evaluate(message));
    const outcomes = pending.some((outcome) => outcome instanceof Promise) ? await Promise.all(pending) : (pending as Outcome[]);
    const run: ProcessedRun = { results: [], deadLetters: [], lastHandledOffset: undefined, retry: undefined };
    for (const [index, outcome] of outcomes.entries()) {
      const message = messages[index]!;
      const source: SourcePosition = { topic, partition, offset: message.offset };
      const key = `${topic}/${partition}/${message.offset}`;
      if (outcome.ok) {
        run.results.push(resultRecord(message, outcome.evaluation, source));
      } else {
        const attempt = (this.#attempts.get(key) ?? 0) + 1;
        const decision = decideFailure(outcome.error, attempt, this.#options.maxUnexpectedAttempts);
        if (decision.kind === 'retry') {
          this.#attempts.set(key, attempt);
          run.retry = { offset: message.offset, attempt, reason: decision.reason };
          break;
        }
        run.deadLetters.push(deadLetterRecord(message, source, decision));
      }
      this.#attempts.delete(key);
      run.lastHandledOffset = message.offset;
    }
    return run;
  }

  /** Forgets retry counts of partitions this instance no longer owns. */
  forgetPartitionsExcept(topic: string, owned: ReadonlySet<number>): void {
    for (const key of this.#attempts.keys()) {
      const [keyTopic, keyPartition] = key.split('/');
      if (keyTopic === topic && !owned.has(Number(keyPartition))) this.#attempts.delete(key);
    }
  }

  #evaluate(message: InputMessage): Outcome | Promise<Outcome> {
    try {
      const fact = decodeFactValue(message.value, this.#options.decoder);
      return fact instanceof Promise ? fact.then((decoded) => this.#evaluateFact(decoded), failed) : this.#evaluateFact(fact);
    } catch (error) {
      return failed(error);
    }
  }

  #evaluateFact(fact: FactMessage): Outcome | Promise<Outcome> {
    try {
      const evaluation = this.#options.evaluate(fact);
      return evaluation instanceof Promise ? evaluation.then(succeeded, failed) : succeeded(evaluation);
    } catch (error) {
      return failed(error);
    }
  }
}

function succeeded(evaluation: KafkaEvaluation): Outcome {
  return { ok: true, evaluation };
}

function failed(error: unknown): Outcome {
  return { ok: false, error };
}
