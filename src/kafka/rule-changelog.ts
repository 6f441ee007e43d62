// Rule changes reach every instance through a compacted changelog topic: each instance publishes its changes and
// follows the topic in a group of its own, reloading its catalog from the store to the revision a change names.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Admin, Consumer, Kafka, Producer } from 'kafkajs';
import type { Logger } from 'pino';
import { type RuleChangeMessage, ruleChangeMessageSchema } from '../contracts/kafka-messages.ts';
import { within } from '../within.ts';
import { type CrashRestart, restartAfterCrashes } from './crash-restart.ts';
import { SESSION_TIMEOUT_MS } from './fact-consumer.ts';
import { backoffMs } from './failure-policy.ts';
import { orderedProducer } from './result-output.ts';
import { changelogTopicConfig } from './topics.ts';

export interface RuleChangelogOptions {
  kafka: Kafka;
  admin: Admin;
  topic: string;
  /** Unique per instance: every instance must see every change, so none may share a group. */
  groupId: string;
  /** Brings the local catalog to at least `revision` (undefined: the store's latest) by reloading from the store. */
  reload(revision: number | undefined): Promise<void>;
  logger: Logger;
}

/** Parses a changelog value; undefined for anything that is not a rule change (logged and skipped, never fatal). */
export function parseRuleChange(value: Buffer | null): RuleChangeMessage | undefined {
  if (value === null) return undefined;
  try {
    const parsed = ruleChangeMessageSchema.safeParse(JSON.parse(value.toString('utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** Compaction keeps the latest change per key: one key per rule, and one for changes not tied to a rule. */
export function changeKey(change: RuleChangeMessage): string {
  return change.rule_id === null ? 'all' : `rule-${change.rule_id}`;
}

/** Merges two reload requests: null is none, undefined is "the latest", which covers any revision. */
export function mergeReloadTarget(a: ReloadTarget, b: ReloadTarget): ReloadTarget {
  if (a === null) return b;
  if (b === null) return a;
  if (a === undefined || b === undefined) return undefined;
  return Math.max(a, b);
}

export type ReloadTarget = number | undefined | null;

/** Longest a stop waits for the changelog consumer to leave its group: well inside the pipeline's 3 s for the whole stop, so the group is still deleted. */
const STOP_WAIT_MS = 1_500;

/** Between restarts of a crashed consumer, as for the facts consumer. */
const RESTART_BACKOFF = { initialMs: 100, maxMs: 5_000 };

/** The Kafka error type behind a kafkajs error (a retries-exceeded error wraps the last cause). */
function causeType(error: unknown): unknown {
  let cause = error as { type?: unknown; originalError?: unknown; cause?: unknown } | undefined;
  for (let depth = 0; cause !== undefined && cause !== null && depth < 5; depth += 1) {
    if (cause.type !== undefined) return cause.type;
    cause = (cause.originalError ?? cause.cause) as typeof cause;
  }
  return undefined;
}

export class RuleChangelog {
  readonly #options: RuleChangelogOptions;
  readonly #consumer: Consumer;
  readonly #producer: Producer;
  // Reloads are coalesced: while one runs, later changes only raise the target.
  #target: ReloadTarget = null;
  #reloading: Promise<void> | undefined;
  #stopped = false;
  readonly #stopping = new AbortController();
  /** Crashes kafkajs restarted the consumer after since it last joined its group. */
  #crashes = 0;
  readonly #restarts: CrashRestart;

  constructor(options: RuleChangelogOptions) {
    this.#options = options;
    this.#consumer = options.kafka.consumer({
      groupId: options.groupId,
      maxWaitTimeInMs: 250,
      allowAutoTopicCreation: false,
      // As the facts consumer's: a member lost in a broker outage is let go after 10 s, not kafkajs's 30, so the
      // rejoin (and a stop waiting on it) is not held up for longer than the service's stop may take.
      sessionTimeout: SESSION_TIMEOUT_MS,
      heartbeatInterval: 1_000,
      retry: { retries: 5, restartOnFailure: (error) => this.#beforeRestart(error) },
    });
    this.#producer = orderedProducer(options.kafka);
    // Changes published between the catalog's first load and joining (or while a crashed consumer was away) are
    // caught by one reload to the latest revision.
    this.#consumer.on(this.#consumer.events.GROUP_JOIN, () => {
      this.#crashes = 0;
      this.#requestReload(undefined);
    });
    this.#restarts = restartAfterCrashes(this.#consumer, {
      name: 'rule changelog consumer',
      logger: options.logger,
      backoff: RESTART_BACKOFF,
      start: () => this.#startConsumer(),
    });
  }

  async start(): Promise<void> {
    await this.#producer.connect();
    await this.#startConsumer();
  }

  async #startConsumer(): Promise<void> {
    await this.#consumer.connect();
    // From the beginning: a change committed after that reload read the store, but published before this consumer's
    // first fetch fixed a "latest" position, would be in neither. The topic is compacted (one record per rule), and
    // a reload to a revision the catalog already has reads nothing.
    await this.#consumer.subscribe({ topics: [this.#options.topic], fromBeginning: true });
    await this.#consumer.run({
      eachBatch: async ({ batch }) => {
        let highest = -1;
        for (const message of batch.messages) {
          const change = parseRuleChange(message.value);
          if (change === undefined)
            this.#options.logger.warn({ offset: message.offset }, 'skipping a rule changelog entry that is not a rule change');
          else highest = Math.max(highest, change.revision);
        }
        if (highest >= 0) this.#requestReload(highest);
      },
    });
  }

  /**
   * Before kafkajs restarts the consumer after a retriable crash, which it would do every 300 ms for good, logging each:
   * a capped back-off, and the topic made again if it was deleted (the database watch covers changes meanwhile). False
   * once stopped: kafkajs restarts a consumer after such a crash even once it was told to stop.
   */
  async #beforeRestart(error: Error): Promise<boolean> {
    this.#crashes += 1;
    try {
      await sleep(backoffMs(this.#crashes, RESTART_BACKOFF), undefined, { signal: this.#stopping.signal });
    } catch {
      return false;
    }
    if (!this.#stopped && causeType(error) === 'UNKNOWN_TOPIC_OR_PARTITION') {
      this.#options.logger.warn('the rule changelog topic is gone; making it again');
      await this.#options.admin
        .createTopics({ topics: [changelogTopicConfig(this.#options.topic)], waitForLeaders: true })
        .catch((cause: unknown) => this.#options.logger.warn({ err: cause }, 'making the rule changelog topic again failed'));
    }
    return !this.#stopped;
  }

  /** Publishes a change made on this instance; every instance (this one included) reloads to its revision. */
  async publish(change: RuleChangeMessage): Promise<void> {
    await this.#producer.send({
      topic: this.#options.topic,
      acks: -1,
      messages: [{ key: changeKey(change), value: JSON.stringify(change) }],
    });
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#stopping.abort();
    await this.#restarts.stop();
    // A rejoin after a broker outage can hold a disconnect up to the session timeout: the group is deleted below anyway.
    await within(this.#consumer.disconnect(), STOP_WAIT_MS);
    await this.#producer.disconnect();
    await this.#reloading?.catch(() => undefined);
    // The group was this instance's alone; it has no committed offsets worth keeping.
    await this.#options.admin.deleteGroups([this.#options.groupId]).catch(() => undefined);
  }

  #requestReload(revision: number | undefined): void {
    this.#target = mergeReloadTarget(this.#target, revision);
    this.#reloading ??= this.#drain().finally(() => {
      this.#reloading = undefined;
    });
  }

  async #drain(): Promise<void> {
    let attempt = 0;
    while (this.#target !== null && !this.#stopped) {
      const target = this.#target;
      this.#target = null;
      try {
        await this.#options.reload(target);
        attempt = 0;
      } catch (error) {
        // The store is unreachable: keep the target and try again, so the change is not forgotten.
        attempt += 1;
        this.#target = mergeReloadTarget(this.#target, target);
        this.#options.logger.warn({ err: error, revision: target, attempt }, 'rule reload failed; retrying');
        await new Promise((resolve) => setTimeout(resolve, backoffMs(attempt, { initialMs: 100, maxMs: 5_000 })));
      }
    }
  }
}
