// Turns a run of input messages into result and dead-letter records, stopping at the first message that must be retried.
import type { Message } from 'kafkajs';
import type { FactMessage, SourcePosition } from '../contracts/kafka-messages.ts';
import { EventLoopTurns } from '../evaluation/event-loop-turns.ts';
import type { SessionEvaluation } from '../evaluation/session-evaluator.ts';
import type { RegistryDecoder } from './fact-codec.ts';
import { type DecodedFact, decodeFactValue } from './fact-codec.ts';
import { decideFailure } from './failure-policy.ts';
import {
  deadLetterRecord,
  type InputMessage,
  type KafkaEvaluation,
  positionOnlyDeadLetter,
  resultRecord,
  sessionResultRecord,
  truncatedSessionResultRecord,
} from './result-message.ts';
import { byteLength, headerBytes, RECORD_OVERHEAD_BYTES, recordBytes } from './result-output.ts';
import type { SessionRouter, SessionWork } from './session-routing.ts';
import { deadLetterBatchBytes, resultBatchBytes } from './topics.ts';

/**
 * Evaluates one decoded fact message through the evaluate use case (the one POST /api/v1/evaluate uses); `json` is the
 * message's JSON text, which the execution record may reuse (undefined for a value decoded through the registry).
 */
export type EvaluateFactMessage = (message: FactMessage, json: string | undefined) => KafkaEvaluation | Promise<KafkaEvaluation>;

export interface ProcessedRun {
  results: Message[];
  deadLetters: Message[];
  /** Offset of the last message answered (result, dead letter, or a streaming write with nothing to publish). */
  lastHandledOffset: string | undefined;
  /** The first message that failed transiently: it and everything after it are left for redelivery. */
  retry: { offset: string; attempt: number; reason: string } | undefined;
}

export interface BatchProcessorOptions {
  decoder: RegistryDecoder | undefined;
  evaluate: EvaluateFactMessage;
  /** Routes session_id messages (and, in streaming mode, every message) to a session; absent: everything is stateless. */
  sessions?: SessionRouter;
  /** Unexpected (uncoded) failures of one message are retried this many times before it is dead-lettered. */
  maxUnexpectedAttempts: number;
  /**
   * Largest result (key plus value bytes) sent to the results topic (KAFKA_MAX_RESULT_BYTES). A larger one would be refused
   * by the broker on every retry and hold the partition up for good, so its input is dead-lettered instead. Default 1,000,000.
   */
  maxResultBytes?: number;
  /** What set maxResultBytes, named in the dead-letter reason; default KAFKA_MAX_RESULT_BYTES. */
  maxResultBytesSource?: string;
  /** Most record bytes one batch to the results topic may hold, so one result with its headers too (see resultBatchBytes). */
  resultBatchBytes?: number;
  /** Most record bytes one batch to the dead-letter topic may hold (see deadLetterBatchBytes). */
  deadLetterBatchBytes?: number;
}

const DEFAULT_MAX_RESULT_BYTES = 1_000_000;
/** Facts evaluated between two turns of the event loop, as the HTTP bulk does. */
const EVALUATIONS_PER_TURN = 256;

type Outcome =
  | { ok: true; evaluation: KafkaEvaluation }
  | { ok: true; session: SessionEvaluation; publish: boolean }
  // A session write not attempted because an earlier write to the same session must be retried first.
  | { ok: false; error: unknown; held?: true };

type Decoded = { ok: true; fact: FactMessage; json: string | undefined } | { ok: false; error: unknown };

export class BatchProcessor {
  readonly #options: BatchProcessorOptions;
  // Failed attempts per message still awaiting redelivery, keyed topic/partition/offset.
  readonly #attempts = new Map<string, number>();
  // Session writes already applied (or decided as dead letters while later writes to the session went ahead) but not
  // yet delivered, per topic/partition then offset: a redelivery reuses them, so a write is never applied twice by this
  // instance, never applied after the writes that followed it, and its activated/deactivated are never lost. Stateless
  // evaluations past a message to retry are kept the same way, so none is recorded or counted twice.
  readonly #applied = new Map<string, Map<string, Outcome>>();
  // The last run of each partition until it is delivered: should its delivery fail, its evaluations are kept.
  readonly #undelivered = new Map<string, { outcomes: readonly Outcome[]; sources: readonly SourcePosition[] }>();

  constructor(options: BatchProcessorOptions) {
    this.#options = options;
  }

  async process(topic: string, partition: number, messages: readonly InputMessage[]): Promise<ProcessedRun> {
    const count = messages.length;
    // JSON facts decode synchronously; only registry lookups leave promises to wait for.
    let decoded: (Decoded | Promise<Decoded>)[] = new Array(count);
    let decodePending = false;
    for (let index = 0; index < count; index++) {
      const item = this.#decode(messages[index]!);
      decoded[index] = item;
      if (item instanceof Promise) decodePending = true;
    }
    if (decodePending) decoded = await Promise.all(decoded);
    const applied = this.#applied.get(`${topic}/${partition}`);
    const sessions = this.#options.sessions;
    const sources: SourcePosition[] = new Array(count);
    // Session writes to one session run one after another in offset order; a write that must be retried holds back the rest.
    const lanes = new Map<string, Promise<boolean>>();
    // A message to be decoded again could belong to any session, so once one is met every later session write waits.
    const order = { undecided: false };
    let outcomes: (Outcome | Promise<Outcome>)[] = new Array(count);
    let outcomePending = false;
    const turns = new EventLoopTurns(EVALUATIONS_PER_TURN);
    for (let index = 0; index < count; index++) {
      // Evaluations run synchronously: a run of costly rules would hold the event loop (HTTP, readiness, heartbeats).
      if (turns.due(index)) await turns.take();
      const message = messages[index]!;
      const source: SourcePosition = { topic, partition, offset: message.offset };
      sources[index] = source;
      const outcome = this.#outcome(message, decoded[index] as Decoded, source, applied, sessions, lanes, order);
      outcomes[index] = outcome;
      if (outcome instanceof Promise) outcomePending = true;
    }
    if (outcomePending) outcomes = await Promise.all(outcomes);
    const run: ProcessedRun = { results: [], deadLetters: [], lastHandledOffset: undefined, retry: undefined };
    for (let index = 0; index < count; index++) {
      const outcome = outcomes[index] as Outcome;
      const message = messages[index]!;
      const source = sources[index]!;
      if (outcome.ok) {
        const record =
          'evaluation' in outcome
            ? resultRecord(message, outcome.evaluation, source)
            : outcome.publish
              ? sessionResultRecord(message, outcome.session, source)
              : undefined;
        if (record !== undefined) {
          let tooLarge = this.#oversized(record);
          if (tooLarge === undefined) run.results.push(record);
          else if ('session' in outcome) {
            // The write was applied: its change must reach downstream, so it goes without the fired rules and actions.
            const truncated = truncatedSessionResultRecord(message, outcome.session, source);
            tooLarge = this.#oversized(truncated, true);
            if (tooLarge === undefined) run.results.push(truncated);
            else run.deadLetters.push(this.#deadLetter(message, source, tooLarge));
          } else run.deadLetters.push(this.#deadLetter(message, source, tooLarge));
        }
      } else {
        const key = attemptKey(source);
        const attempt = (this.#attempts.get(key) ?? 0) + (outcome.held === true ? 0 : 1);
        const decision =
          outcome.held === true
            ? ({ kind: 'retry', reason: 'an earlier write to the same session must be retried first' } as const)
            : decideFailure(outcome.error, attempt, this.#options.maxUnexpectedAttempts);
        if (decision.kind === 'retry') {
          if (outcome.held !== true) this.#attempts.set(key, attempt);
          run.retry = { offset: message.offset, attempt: Math.max(1, attempt), reason: decision.reason };
          this.#keepEvaluationsAfter(index, outcomes as Outcome[], sources);
          break;
        }
        run.deadLetters.push(this.#deadLetter(message, source, decision));
      }
      // Only messages that failed before keep a retry count: most runs have none to forget.
      if (this.#attempts.size > 0) this.#attempts.delete(attemptKey(source));
      run.lastHandledOffset = message.offset;
    }
    this.#undelivered.set(`${topic}/${partition}`, { outcomes: outcomes as Outcome[], sources });
    return run;
  }

  /** Evaluates one decoded message: a reused applied session write, a stateless evaluation, or a session write in its lane. */
  #outcome(
    message: InputMessage,
    item: Decoded,
    source: SourcePosition,
    applied: Map<string, Outcome> | undefined,
    sessions: SessionRouter | undefined,
    lanes: Map<string, Promise<boolean>>,
    order: { undecided: boolean },
  ): Outcome | Promise<Outcome> {
    const cached = applied?.get(message.offset);
    if (cached !== undefined) return cached;
    if (!item.ok) {
      if (sessions !== undefined && this.#mustRetry(item.error, source)) order.undecided = true;
      return item;
    }
    let work: SessionWork | undefined;
    try {
      work = sessions?.(item.fact, { key: message.key, source });
    } catch (error) {
      return failed(error);
    }
    if (work === undefined) return this.#evaluateFact(item.fact, item.json);
    if (order.undecided) return held();
    const sessionWork = work;
    const previous = lanes.get(sessionWork.lane) ?? Promise.resolve(true);
    const outcome = previous.then((go) => (go ? this.#write(sessionWork, source) : held()));
    lanes.set(
      sessionWork.lane,
      outcome.then((done) => {
        if (done.ok) return true;
        if (done.held === true || this.#mustRetry(done.error, source)) return false;
        // Later writes go ahead of this dead letter: a redelivery must dead-letter it again, not apply it after them.
        this.#keep(source, done);
        return true;
      }),
    );
    return outcome;
  }

  /**
   * Called when a run's delivery failed: its stateless evaluations are kept like its session writes, so the run fetched
   * again publishes them under the execution_ids they were recorded with instead of recording new ones.
   */
  undelivered(topic: string, partition: number): void {
    const run = this.#undelivered.get(`${topic}/${partition}`);
    if (run === undefined) return;
    this.#undelivered.delete(`${topic}/${partition}`);
    this.#keepEvaluationsAfter(-1, run.outcomes, run.sources);
  }

  /** Called once a run is delivered: applied session writes up to that offset are no longer needed for redelivery. */
  delivered(topic: string, partition: number, lastOffset: string): void {
    this.#undelivered.delete(`${topic}/${partition}`);
    const applied = this.#applied.get(`${topic}/${partition}`);
    if (applied === undefined) return;
    const last = BigInt(lastOffset);
    for (const offset of applied.keys()) if (BigInt(offset) <= last) applied.delete(offset);
    if (applied.size === 0) this.#applied.delete(`${topic}/${partition}`);
  }

  /** Forgets retry counts and applied writes of partitions this instance no longer owns. */
  forgetPartitionsExcept(topic: string, owned: ReadonlySet<number>): void {
    for (const key of this.#attempts.keys()) {
      const [keyTopic, keyPartition] = key.split('/');
      if (keyTopic === topic && !owned.has(Number(keyPartition))) this.#attempts.delete(key);
    }
    for (const map of [this.#applied, this.#undelivered]) {
      for (const key of map.keys()) {
        const [keyTopic, keyPartition] = key.split('/');
        if (keyTopic === topic && !owned.has(Number(keyPartition))) map.delete(key);
      }
    }
  }

  /** The dead-letter reason for a result the broker would refuse as too large (`truncated`: even so), else undefined. */
  #oversized(record: Message, truncated = false): { code: 'PAYLOAD_TOO_LARGE'; detail: string } | undefined {
    const limit = this.#options.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES;
    const recordLimit = this.#options.resultBatchBytes ?? resultBatchBytes(limit);
    const headers = headerBytes(record);
    if (surelyWithin(record, Math.min(limit, recordLimit - headers - RECORD_OVERHEAD_BYTES))) return undefined;
    const keyBytes = byteLength(record.key);
    const bytes = byteLength(record.value) + keyBytes;
    if (bytes > limit) {
      const setting = this.#options.maxResultBytesSource ?? 'KAFKA_MAX_RESULT_BYTES';
      // The result carries the input's key: when that is most of it, the key is the cause, not the rules.
      const byKey = keyBytes * 2 >= bytes;
      const keyCause = `${keyBytes} of those bytes are the message key, which the result carries: send a shorter key`;
      return {
        code: 'PAYLOAD_TOO_LARGE',
        detail: truncated
          ? `the session result is ${bytes} bytes even without its fired rules and actions, over the ${limit}-byte limit for one result message (${setting}); the write was applied, but its change (activated, deactivated) is too large to publish${byKey ? `; ${keyCause}` : ''}`
          : `the result is ${bytes} bytes, over the ${limit}-byte limit for one result message (${setting}); ${byKey ? keyCause : 'the fact fired too many rules to publish'}`,
      };
    }
    // Headers carried from the input count too: the broker would refuse the record for good and hold up its partition.
    const whole = recordBytes(record);
    if (whole <= recordLimit) return undefined;
    return {
      code: 'PAYLOAD_TOO_LARGE',
      detail: `the result with the ${headers} bytes of headers carried from the input is ${whole} bytes, over the ${recordLimit} bytes the results topic takes in one message; send smaller headers`,
    };
  }

  /** The message's dead letter, whole when the dead-letter topic takes it, else with its reason and position only. */
  #deadLetter(message: InputMessage, source: SourcePosition, failure: { code: string; detail: string }): Message {
    const record = deadLetterRecord(message, source, failure);
    const limit = this.#options.deadLetterBatchBytes ?? deadLetterBatchBytes();
    const bytes = recordBytes(record);
    return bytes <= limit ? record : positionOnlyDeadLetter(message, source, failure, { bytes, limit });
  }

  #decode(message: InputMessage): Decoded | Promise<Decoded> {
    try {
      const fact = decodeFactValue(message.value, this.#options.decoder);
      return fact instanceof Promise ? fact.then(decodedFact, failed) : decodedFact(fact);
    } catch (error) {
      return failed(error);
    }
  }

  #evaluateFact(fact: FactMessage, json: string | undefined): Outcome | Promise<Outcome> {
    try {
      const evaluation = this.#options.evaluate(fact, json);
      return evaluation instanceof Promise ? evaluation.then(succeeded, failed) : succeeded(evaluation);
    } catch (error) {
      return failed(error);
    }
  }

  async #write(work: SessionWork, source: SourcePosition): Promise<Outcome> {
    let session: SessionEvaluation;
    try {
      session = await work.run();
    } catch (error) {
      return failed(error);
    }
    const outcome: Outcome = { ok: true, session, publish: work.publishes(session) };
    this.#keep(source, outcome);
    return outcome;
  }

  /**
   * Keeps the stateless evaluations made past `index` (past a message that must be retried, or all of an undelivered
   * run): each was counted and recorded under its execution_id, so the redelivery publishes it instead of evaluating
   * (and recording) the fact again.
   */
  #keepEvaluationsAfter(index: number, outcomes: readonly Outcome[], sources: readonly SourcePosition[]): void {
    for (let later = index + 1; later < outcomes.length; later++) {
      const outcome = outcomes[later] as Outcome;
      if (outcome.ok && 'evaluation' in outcome) this.#keep(sources[later] as SourcePosition, outcome);
    }
  }

  /** Keeps a session write's outcome (applied, or to be dead-lettered) until its run is delivered. */
  #keep(source: SourcePosition, outcome: Outcome): void {
    const partitionKey = `${source.topic}/${source.partition}`;
    let applied = this.#applied.get(partitionKey);
    if (applied === undefined) {
      applied = new Map();
      this.#applied.set(partitionKey, applied);
    }
    applied.set(source.offset, outcome);
  }

  /** Whether the failure will be retried (as the walk over outcomes will decide it). */
  #mustRetry(error: unknown, source: SourcePosition): boolean {
    const attempt = (this.#attempts.get(attemptKey(source)) ?? 0) + 1;
    return decideFailure(error, attempt, this.#options.maxUnexpectedAttempts).kind === 'retry';
  }
}

function attemptKey(source: SourcePosition): string {
  return `${source.topic}/${source.partition}/${source.offset}`;
}

function decodedFact(decoded: DecodedFact): Decoded {
  return { ok: true, fact: decoded.fact, json: decoded.json };
}

function succeeded(evaluation: KafkaEvaluation): Outcome {
  return { ok: true, evaluation };
}

function failed(error: unknown): { ok: false; error: unknown } {
  return { ok: false, error };
}

function held(): Outcome {
  return { ok: false, error: undefined, held: true };
}

/** UTF-8 takes at most 3 bytes per UTF-16 unit: most results are far under the limit without counting their bytes. */
function surelyWithin(record: Message, limit: number): boolean {
  const value = typeof record.value === 'string' ? record.value.length * 3 : byteLength(record.value);
  return value + byteLength(record.key) <= limit;
}
