// The facts consumer: batched consume → evaluate → produce → commit, with per-partition back-off and observable state.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Consumer, EachBatchPayload, Kafka } from 'kafkajs';
import type { Logger } from 'pino';
import { backlogWeight } from '../store/executions-repository.ts';
import type { BatchProcessor } from './batch-processor.ts';
import { type CrashRestart, restartAfterCrashes } from './crash-restart.ts';
import { backoffMs } from './failure-policy.ts';
import { RecurringWait } from './recurring-wait.ts';
import type { ResultOutput } from './result-output.ts';

export type ConsumerStatus = 'starting' | 'running' | 'rebalancing' | 'stopping' | 'stopped' | 'crashed';

export interface ConsumerState {
  status: ConsumerStatus;
  /** Facts-topic partitions this instance owns. */
  assigned_partitions: number[];
  /** Partitions paused while a transient failure backs off. */
  backing_off_partitions: number[];
  /** True while consumption waits for the execution store to write its backlog (back-pressure). */
  waiting_for_store: boolean;
  /** Joins of the consumer group since start; each after the first is a rebalance, which may answer uncommitted runs again. */
  group_joins: number;
  /** Milliseconds since the group coordinator last answered (a heartbeat or a join); null before the first join. */
  ms_since_heartbeat: number | null;
  last_error: string | null;
}

/** The consumer's session: a broker silent this long has let the member go, or cannot be reached. */
export const SESSION_TIMEOUT_MS = 10_000;

/** In the group and heard from within a session: a broker that stopped answering (a network black hole) is not ready. */
export function consumerReady(state: ConsumerState): boolean {
  return state.status === 'running' && state.ms_since_heartbeat !== null && state.ms_since_heartbeat < SESSION_TIMEOUT_MS;
}

export interface FactConsumerOptions {
  kafka: Kafka;
  groupId: string;
  topic: string;
  processor: BatchProcessor;
  output: ResultOutput;
  logger: Logger;
  /** Most messages evaluated and produced per run; a larger fetched batch is handled in several runs, heartbeating between. */
  maxRunSize: number;
  /** Partitions processed at the same time: lets one partition's produce overlap another's evaluation. */
  partitionsConsumedConcurrently: number;
  backoff: { initialMs: number; maxMs: number };
  /**
   * Back-pressure from the execution store: a run is evaluated only when its records fit under `max` beside the pending
   * ones and those of runs under way (each message records at most one, about as large as its value); otherwise the
   * fetched batch waits, heartbeating, until the backlog is back under half of `max`, so a slow database slows
   * consumption instead of growing memory.
   */
  storeBacklog?: {
    pending: () => number;
    max: number;
    /** Most a run may weigh (at least one message): every partition's run together within half of `max`. */
    maxRunWeight: number;
  };
}

const BACKLOG_POLL_MS = 100;
/** How often a stop checks whether the broker still answers while it waits for the consumer to leave. */
const STOP_POLL_MS = 250;
/** Heartbeats while a run is processed and delivered (kafkajs sends at most one per heartbeatInterval). */
const HEARTBEAT_TICK_MS = 1_000;

// kafkajs rejoins the group itself when these reach it.
const REBALANCE_ERRORS = new Set(['REBALANCE_IN_PROGRESS', 'NOT_COORDINATOR_FOR_GROUP', 'ILLEGAL_GENERATION', 'UNKNOWN_MEMBER_ID']);

export function isRebalanceError(error: unknown): boolean {
  const type = (error as { type?: unknown } | null)?.type;
  return typeof type === 'string' && REBALANCE_ERRORS.has(type);
}

/**
 * Splits a fetched batch into runs of at most `size` messages and, past their first, at most `maxWeight` in all,
 * keeping order.
 */
export function runsOf<T>(items: readonly T[], size: number, weightOf: (item: T) => number = () => 1, maxWeight = Infinity): T[][] {
  const runs: T[][] = [];
  let run: T[] = [];
  let weight = 0;
  for (const item of items) {
    const itemWeight = weightOf(item);
    if (run.length > 0 && (run.length >= size || weight + itemWeight > maxWeight)) {
      runs.push(run);
      run = [];
      weight = 0;
    }
    run.push(item);
    weight += itemWeight;
  }
  if (run.length > 0) runs.push(run);
  return runs;
}

/** What a message's execution record weighs in the store's backlog: one record, or its value's bytes when that is more. */
function recordWeight(message: { value: Buffer | null }): number {
  return backlogWeight(1, message.value?.length ?? 0);
}

export class FactConsumer {
  readonly #options: FactConsumerOptions;
  readonly #consumer: Consumer;
  #status: ConsumerStatus = 'starting';
  #assigned: number[] = [];
  #lastError: string | null = null;
  #waitingForStore = false;
  /** Which of the waits for the store are logged: at the bound, the consumer waits several times a second. */
  readonly #storeWaits = new RecurringWait();
  /** What the runs under way may still add to the store's backlog (as executionBacklog weighs it), against its limit. */
  #reserved = 0;
  #groupJoins = 0;
  // performance.now() of the coordinator's last answer (heartbeat or join).
  #lastHeartbeat: number | undefined;
  // Per partition: consecutive delivery failures (for back-off) and the timer that resumes it.
  readonly #failures = new Map<number, number>();
  readonly #resumeTimers = new Map<number, NodeJS.Timeout>();
  readonly #restarts: CrashRestart;
  // Set once stop() is called: from then on no restart (kafkajs's or ours), join or batch takes the consumer back up.
  #stopRequested = false;

  constructor(options: FactConsumerOptions) {
    this.#options = options;
    this.#consumer = options.kafka.consumer({
      groupId: options.groupId,
      // read_committed: inputs from an aborted upstream transaction are never evaluated.
      readUncommitted: false,
      allowAutoTopicCreation: false,
      maxWaitTimeInMs: 500,
      // A crashed instance's partitions move on after 10 s; heartbeats go out between runs, well inside that.
      sessionTimeout: SESSION_TIMEOUT_MS,
      heartbeatInterval: 1_000,
      // kafkajs restarts a consumer after a retriable crash even once it was told to stop.
      retry: { retries: 5, restartOnFailure: async () => !this.#stopRequested },
    });
    this.#watchEvents();
    this.#restarts = restartAfterCrashes(this.#consumer, {
      name: 'Kafka consumer',
      logger: options.logger,
      backoff: options.backoff,
      start: () => this.start(),
    });
  }

  state(): ConsumerState {
    return {
      status: this.#status,
      waiting_for_store: this.#waitingForStore,
      group_joins: this.#groupJoins,
      ms_since_heartbeat: this.#lastHeartbeat === undefined ? null : Math.round(performance.now() - this.#lastHeartbeat),
      assigned_partitions: [...this.#assigned],
      backing_off_partitions: [...this.#resumeTimers.keys()].sort((a, b) => a - b),
      last_error: this.#lastError,
    };
  }

  async start(): Promise<void> {
    await this.#consumer.connect();
    // A new group starts from the earliest offset so facts produced before the first start are not skipped.
    await this.#consumer.subscribe({ topics: [this.#options.topic], fromBeginning: true });
    await this.#consumer.run({
      // At-least-once: offsets are committed only by the output, after the records are acknowledged.
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: this.#options.partitionsConsumedConcurrently,
      eachBatch: (payload) => this.#handleBatch(payload),
    });
  }

  /**
   * Stops fetching, lets the batch in hand finish (and commit), leaves the group and disconnects; false when it gave
   * up on a broker silent for a whole session instead.
   */
  async stop(): Promise<boolean> {
    if (this.#status === 'stopped') return true;
    this.#stopRequested = true;
    this.#status = 'stopping';
    for (const timer of this.#resumeTimers.values()) clearTimeout(timer);
    this.#resumeTimers.clear();
    // Leaving (after a restart under way has settled) finishes the batch in hand; a broker silent for a whole session
    // cannot take its commit, nor answer a restart's connect, so the stop goes on.
    const stopAt = performance.now();
    const leaving = this.#restarts
      .stop()
      .then(() => this.#consumer.disconnect())
      .then(() => true);
    let left = false;
    while (!left) {
      left = await Promise.race([leaving, sleep(STOP_POLL_MS, false)]);
      if (!left && performance.now() - (this.#lastHeartbeat ?? stopAt) >= SESSION_TIMEOUT_MS) break;
    }
    if (!left) {
      leaving.catch(() => undefined);
      this.#options.logger.warn('the broker has not answered for a whole consumer session: stopping without leaving the group');
    }
    this.#status = 'stopped';
    return left;
  }

  async #handleBatch(payload: EachBatchPayload): Promise<void> {
    // A batch reaching a stopped consumer (kafkajs left a restart running) stays for the partition's next owner.
    if (this.#stopRequested) return;
    const { batch, heartbeat } = payload;
    const backlog = this.#options.storeBacklog;
    const runs = runsOf(batch.messages, this.#options.maxRunSize, recordWeight, backlog?.maxRunWeight);
    for (const [index, run] of runs.entries()) {
      // Each message records at most one execution, holding about its value's bytes.
      const weight = backlog === undefined ? 0 : run.reduce((sum, message) => sum + recordWeight(message), 0);
      if (!(await this.#storeHasRoom(payload, weight))) return;
      this.#reserved += weight;
      // A run slower than the session timeout (a stalled store, a slow broker) must not cost the group membership.
      const ticker = setInterval(() => heartbeat().catch(() => undefined), HEARTBEAT_TICK_MS);
      try {
        if (!(await this.#runOnce(payload, run, index === runs.length - 1))) return;
      } finally {
        clearInterval(ticker);
        this.#reserved -= weight;
      }
    }
  }

  /**
   * Processes and delivers one run; false when the partition backs off and the rest of the batch waits. The batch's
   * last run, answered to its end, also covers what the batch holds after its last fact (an upstream transaction's
   * commit marker, aborted records): nothing there is ever evaluated, and a position short of it would show as lag.
   */
  async #runOnce(payload: EachBatchPayload, run: EachBatchPayload['batch']['messages'], lastRun: boolean): Promise<boolean> {
    const { batch, resolveOffset, heartbeat } = payload;
    const { topic, partition } = batch;
    const processed = await this.#options.processor.process(topic, partition, run);
    if (processed.lastHandledOffset !== undefined) {
      const toBatchEnd = lastRun && processed.retry === undefined && processed.lastHandledOffset === run.at(-1)?.offset;
      const handledThrough = toBatchEnd ? batch.lastOffset() : processed.lastHandledOffset;
      const nextOffset = (BigInt(handledThrough) + 1n).toString();
      try {
        await this.#options.output.deliver(
          { topic, partition, results: processed.results, deadLetters: processed.deadLetters, nextOffset },
          (commitTopic, commitPartition, offset) =>
            payload.commitOffsetsIfNecessary({ topics: [{ topic: commitTopic, partitions: [{ partition: commitPartition, offset }] }] }),
        );
      } catch (error) {
        this.#options.processor.undelivered(topic, partition);
        if (isRebalanceError(error)) throw error;
        this.#backOff(payload, partition, 'delivery failed', error, (this.#failures.get(partition) ?? 0) + 1);
        return false;
      }
      this.#failures.delete(partition);
      this.#options.processor.delivered(topic, partition, processed.lastHandledOffset);
      // The fetch position moves past the run only once it is delivered; unresolved messages are fetched again.
      resolveOffset(handledThrough);
    }
    await heartbeat();
    if (processed.retry !== undefined) {
      this.#backOff(
        payload,
        partition,
        `message at offset ${processed.retry.offset} failed transiently`,
        processed.retry.reason,
        processed.retry.attempt,
      );
      return false;
    }
    return true;
  }

  /**
   * Waits until a run whose records weigh `records` fits in the execution store's backlog beside the runs under way, or, once
   * the store fell behind, until it is back under half; false when the consumer stops or the batch goes stale meanwhile.
   * Checking the backlog alone let every partition's run pass at once and add up to partitions x run size past it.
   */
  async #storeHasRoom({ heartbeat, isRunning, isStale }: EachBatchPayload, records: number): Promise<boolean> {
    const backlog = this.#options.storeBacklog;
    if (backlog === undefined) return isRunning() && !isStale();
    const fits = () => backlog.pending() + this.#reserved + records <= backlog.max;
    if (fits()) return isRunning() && !isStale();
    const behind = (unlogged: number | undefined): void => {
      if (unlogged === undefined) return;
      this.#options.logger.warn(
        { execution_backlog: backlog.pending(), max: backlog.max, ...(unlogged > 0 ? { waits_not_logged: unlogged } : {}) },
        'execution store is behind; consumption waits until it catches up',
      );
    };
    // Partitions wait together: one still waiting after another saw the store catch up starts a wait of its own.
    const waiting = (): void => {
      if (this.#waitingForStore) {
        behind(this.#storeWaits.stillWaiting());
        return;
      }
      this.#waitingForStore = true;
      behind(this.#storeWaits.begin());
    };
    // With no run under way, a backlog under half lets any run go: runs weigh at most a share of the other half.
    const mustWait = () => isRunning() && !isStale() && !(backlog.pending() <= backlog.max / 2 && (fits() || this.#reserved === 0));
    waiting();
    while (mustWait()) {
      await heartbeat();
      await sleep(BACKLOG_POLL_MS);
      if (mustWait()) waiting();
    }
    if (this.#waitingForStore && backlog.pending() <= backlog.max / 2) {
      this.#waitingForStore = false;
      if (this.#storeWaits.end()) {
        this.#options.logger.info({ execution_backlog: backlog.pending() }, 'execution store caught up; consumption resumes');
      }
    }
    return isRunning() && !isStale();
  }

  /** Pauses one partition and resumes it after a capped exponential back-off; other partitions keep flowing. */
  #backOff(payload: EachBatchPayload, partition: number, what: string, error: unknown, attempt: number): void {
    this.#failures.set(partition, attempt);
    const delay = backoffMs(attempt, this.#options.backoff);
    this.#lastError = `${what}: ${error instanceof Error ? error.message : String(error)}`;
    this.#options.logger.warn({ topic: this.#options.topic, partition, attempt, delay_ms: delay, err: error }, `${what}; retrying`);
    const resume = payload.pause();
    clearTimeout(this.#resumeTimers.get(partition));
    this.#resumeTimers.set(
      partition,
      setTimeout(() => {
        this.#resumeTimers.delete(partition);
        resume();
      }, delay),
    );
  }

  #watchEvents(): void {
    const { events } = this.#consumer;
    this.#consumer.on(events.GROUP_JOIN, (event) => {
      // kafkajs does not cancel a restart already connecting when it is stopped: such a late join owns nothing. (The
      // stop's own disconnect follows; a disconnect from inside the join would leave kafkajs a runner it no longer tracks.)
      if (this.#stopRequested) return;
      const partitions = event.payload.memberAssignment[this.#options.topic] ?? [];
      this.#assigned = [...partitions].sort((a, b) => a - b);
      this.#status = 'running';
      this.#groupJoins += 1;
      this.#lastHeartbeat = performance.now();
      const owned = new Set(this.#assigned);
      this.#options.processor.forgetPartitionsExcept(this.#options.topic, owned);
      this.#options.output
        .assigned(owned)
        .catch((error: unknown) => this.#options.logger.warn({ err: error }, 'releasing producers failed'));
      this.#options.logger.info({ group_id: this.#options.groupId, partitions: this.#assigned }, 'Kafka consumer joined the group');
    });
    this.#consumer.on(events.HEARTBEAT, () => {
      this.#lastHeartbeat = performance.now();
    });
    this.#consumer.on(events.REBALANCING, () => {
      if (this.#status === 'running') this.#status = 'rebalancing';
    });
    this.#consumer.on(events.CRASH, (event) => {
      this.#lastError = event.payload.error.message;
      if (!this.#stopRequested) this.#status = event.payload.restart ? 'rebalancing' : 'crashed';
      this.#options.logger.error({ err: event.payload.error, restart: event.payload.restart }, 'Kafka consumer crashed');
    });
    this.#consumer.on(events.STOP, () => {
      if (this.#status !== 'stopping') this.#status = 'stopped';
    });
  }
}
