// The Kafka pipeline's entry point: creates topics, starts the facts consumer and the rule changelog, and stops them in order.
import { randomUUID } from 'node:crypto';
import { type Admin, Kafka } from 'kafkajs';
import type { Logger } from 'pino';
import type { KafkaConfig } from '../config.ts';
import type { RuleChangeMessage } from '../contracts/kafka-messages.ts';
import { within } from '../within.ts';
import { BatchProcessor, type EvaluateFactMessage } from './batch-processor.ts';
import { registerCompressionCodecs } from './compression-codecs.ts';
import { readLag } from './consumer-lag.ts';
import { type ConsumerState, consumerReady, FactConsumer } from './fact-consumer.ts';
import { kafkajsLevel, pinoLogCreator } from './kafkajs-log.ts';
import type { KafkaEvaluation } from './result-message.ts';
import { AtLeastOnceOutput, type ResultOutput } from './result-output.ts';
import { RuleChangelog } from './rule-changelog.ts';
import { connectSchemaRegistry, createRegistryDecoder } from './schema-registry-decoder.ts';
import { type KafkaSessions, sessionRouter } from './session-routing.ts';
import { deadLetterBatchBytes, ensureTopics, maxMessageBytesOf, resultBatchBytes, resultHeadroom } from './topics.ts';
import { TransactionalOutput } from './transactional-output.ts';

export type { EvaluateFactMessage } from './batch-processor.ts';
export type { KafkaEvaluation } from './result-message.ts';
export type { KafkaSessions } from './session-routing.ts';

/** The rule catalog as the changelog needs it: a way to reload from the store, and a hook for local changes. */
export interface RuleCatalogHooks {
  /** Reloads the catalog from the store so it reflects at least `revision` (undefined: the latest). */
  reload(revision: number | undefined): Promise<void>;
  /** Registers a listener for changes made through this instance; returns the function that unregisters it. */
  onChange(listener: (change: RuleChangeMessage) => void): () => void;
}

/** The evaluate use case shared with POST /api/v1/evaluate (src/evaluation/evaluator.ts); it records the execution. */
export interface KafkaEvaluator {
  evaluate(
    facts: Record<string, unknown>,
    options: { domain?: string | undefined; source: 'kafka'; record: boolean; requestJson?: string | undefined },
  ): Omit<KafkaEvaluation, 'domain'> | Promise<Omit<KafkaEvaluation, 'domain'>>;
}

/**
 * Adapts the use case to one fact message: same facts and domain as an HTTP request, recorded with source "kafka"
 * unless `recordExecutions` is false (KAFKA_RECORD_EXECUTIONS).
 */
export function evaluateWith(evaluator: KafkaEvaluator, recordExecutions = true): EvaluateFactMessage {
  return (message, json) => {
    const domain = message.domain ?? undefined;
    const outcome = evaluator.evaluate(message.facts, { domain, source: 'kafka', record: recordExecutions, requestJson: json });
    return outcome instanceof Promise ? outcome.then((evaluation) => withDomain(evaluation, domain)) : withDomain(outcome, domain);
  };
}

/** The result fields alone, named one by one: the outcome may carry more, and a literal is cheaper than a spread per message. */
function withDomain(evaluation: Omit<KafkaEvaluation, 'domain'>, domain: string | undefined): KafkaEvaluation {
  return {
    execution_id: evaluation.execution_id,
    fired_rules: evaluation.fired_rules,
    actions: evaluation.actions,
    latency_ms: evaluation.latency_ms,
    domain: domain ?? null,
    revision: evaluation.revision,
  };
}

/** Longest a stop waits for one Kafka client (admin, producers, the changelog) to disconnect. */
const DISCONNECT_WAIT_MS = 3_000;
/** The same once the broker is known to be silent (the consumer could not leave, or a disconnect ran out of time). */
const SILENT_DISCONNECT_WAIT_MS = 250;

export interface KafkaPipelineDeps {
  config: KafkaConfig;
  /** The evaluate use case shared with POST /api/v1/evaluate. */
  evaluator: KafkaEvaluator;
  /**
   * The session use case shared with /api/v1/sessions: facts with a session_id (and, with config.streaming, every fact)
   * are added to sessions. Absent: such facts are dead-lettered (VALIDATION_ERROR).
   */
  sessions?: KafkaSessions;
  /** Absent: rule changes are not broadcast (single instance, or tests of the facts flow alone). */
  rules?: RuleCatalogHooks;
  logger: Logger;
  /** The pino level, so kafkajs is asked for no more than is printed. */
  logLevel?: string;
  /** Defaults to a random UUID; names this instance's changelog group. */
  instanceId?: string;
  /** Tuning; the defaults suit the service. */
  tuning?: Partial<PipelineTuning>;
  /** The execution backlog as RULES_EXECUTION_BACKLOG_MAX counts it (executionBacklog); consumption waits while it is too large. */
  pendingExecutions?: () => number;
}

export interface PipelineTuning {
  maxRunSize: number;
  partitionsConsumedConcurrently: number;
  maxUnexpectedAttempts: number;
  backoffInitialMs: number;
  backoffMaxMs: number;
  /** Pending execution records above which consumption waits for the store (back-pressure). */
  maxPendingExecutions: number;
}

/** Execution records waiting to be written past which the consumer pauses, unless RULES_EXECUTION_BACKLOG_MAX is lower. */
export const KAFKA_BACKLOG_PAUSE = 50_000;

/**
 * Where the consumer pauses for a given RULES_EXECUTION_BACKLOG_MAX: at half of it when that is lower than the usual
 * point, so the records Kafka adds never take all the room and HTTP requests keep being served meanwhile.
 */
export function backlogPauseAt(backlogMax: number): number {
  return Math.min(KAFKA_BACKLOG_PAUSE, Math.max(1, Math.floor(backlogMax / 2)));
}

/**
 * The most a run's records may weigh in the execution backlog, so that every partition's run under way together holds
 * at most half the backlog the consumer pauses at: a run waiting for room then finds it once the backlog is under half.
 */
export function runWeightUnder(tuning: Pick<PipelineTuning, 'maxPendingExecutions' | 'partitionsConsumedConcurrently'>): number {
  return Math.max(1, Math.floor(tuning.maxPendingExecutions / (2 * tuning.partitionsConsumedConcurrently)));
}

const DEFAULT_TUNING: PipelineTuning = {
  maxRunSize: 1_000,
  partitionsConsumedConcurrently: 3,
  maxUnexpectedAttempts: 3,
  backoffInitialMs: 200,
  backoffMaxMs: 10_000,
  maxPendingExecutions: KAFKA_BACKLOG_PAUSE,
};

export interface KafkaPipelineState extends ConsumerState {
  /** True while the consumer is in the group and consuming. */
  ready: boolean;
  mode: 'at-least-once' | 'exactly-once';
  /** True with KAFKA_STREAMING: every keyed fact goes to its key's session and only changes are published. */
  streaming: boolean;
  group_id: string;
  topic: string;
}

export interface KafkaPipeline {
  /** Stops fetching, finishes and commits the batch in hand, leaves the group, disconnects. */
  stop(): Promise<void>;
  /** For /health/ready. */
  state(): KafkaPipelineState;
  /** Messages on the facts topic the group has not committed yet. */
  lag(): Promise<number>;
  /** Broadcasts a rule change to every instance (also wired to the catalog's change hook). */
  publishRuleChange(change: RuleChangeMessage): Promise<void>;
}

export async function startKafkaPipeline(deps: KafkaPipelineDeps): Promise<KafkaPipeline> {
  const { config, logger } = deps;
  const tuning = { ...DEFAULT_TUNING, ...deps.tuning };
  const instanceId = deps.instanceId ?? randomUUID();
  const { changelogTopic } = config;
  const log = logger.child({ component: 'kafka' });
  // Producers may compress with any codec Kafka knows; a batch kafkajs cannot read stops its partition for good.
  registerCompressionCodecs();
  const kafka = new Kafka({
    clientId: `rules-evaluator-${instanceId}`,
    brokers: [...config.brokers],
    // kafkajs's 1 s connect timeout is too tight for a busy broker; a slow connect is retried, not fatal, anyway.
    connectionTimeout: 10_000,
    logLevel: kafkajsLevel(deps.logLevel ?? 'info'),
    logCreator: pinoLogCreator(log),
  });

  const admin = kafka.admin();
  await admin.connect();
  // Disconnects wait at most DISCONNECT_WAIT_MS: a broker that stops answering would hold each for kafkajs's 30 s
  // request timeout and its retries, past the shutdown's bound. Once it is known silent, the next ones barely wait.
  // Only the consumer's stop (the batch in hand) waits longer.
  let brokerSilent = false;
  const bounded = (name: string, close: () => Promise<void>) => async (): Promise<void> => {
    const waitMs = brokerSilent ? SILENT_DISCONNECT_WAIT_MS : DISCONNECT_WAIT_MS;
    if ((await within(close(), waitMs)) !== undefined) return;
    brokerSilent = true;
    log.warn({ wait_ms: waitMs }, `${name} did not finish in time (the broker is not answering); going on without it`);
  };
  const cleanups: (() => Promise<void>)[] = [bounded('disconnecting the admin client', () => admin.disconnect())];
  const closeAll = async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch((error: unknown) => log.warn({ err: error }, 'Kafka cleanup failed'));
  };
  try {
    const created = await ensureTopics(admin, {
      factsTopic: config.factsTopic,
      resultsTopic: config.resultsTopic,
      dlqTopic: config.dlqTopic,
      changelogTopic,
      partitions: config.partitions,
      maxResultBytes: config.maxResultBytes,
    });
    if (created.length > 0) log.info({ topics: created }, 'created Kafka topics');
    const limits = await topicLimits(admin, config, log);
    const outputTopics = { ...config, resultBatchBytes: limits.resultBatchBytes, deadLetterBatchBytes: limits.deadLetterBatchBytes };

    const output: ResultOutput = config.exactlyOnce
      ? new TransactionalOutput(kafka, outputTopics, config.groupId, config.factsTopic)
      : await AtLeastOnceOutput.open(kafka, outputTopics);
    cleanups.push(bounded('closing the result producers', () => output.close()));

    const processor = new BatchProcessor({
      decoder: config.schemaRegistryUrl === undefined ? undefined : createRegistryDecoder(connectSchemaRegistry(config.schemaRegistryUrl)),
      evaluate: evaluateWith(deps.evaluator, deps.config.recordExecutions),
      sessions: sessionRouter(deps.sessions, config.streaming, config.recordExecutions),
      maxUnexpectedAttempts: tuning.maxUnexpectedAttempts,
      ...limits,
    });

    const changelog = deps.rules === undefined ? undefined : await startChangelog(kafka, admin, changelogTopic, instanceId, deps, log);
    if (changelog !== undefined) {
      cleanups.push(bounded('stopping the rule changelog', () => changelog.stop()));
      const unsubscribe = deps.rules!.onChange((change) => {
        changelog.publish(change).catch((error: unknown) => log.error({ err: error, change }, 'publishing a rule change failed'));
      });
      cleanups.push(async () => unsubscribe());
    }

    const consumer = new FactConsumer({
      kafka,
      groupId: config.groupId,
      topic: config.factsTopic,
      processor,
      output,
      logger: log,
      maxRunSize: tuning.maxRunSize,
      partitionsConsumedConcurrently: tuning.partitionsConsumedConcurrently,
      backoff: { initialMs: tuning.backoffInitialMs, maxMs: tuning.backoffMaxMs },
      ...(deps.pendingExecutions === undefined
        ? {}
        : { storeBacklog: { pending: deps.pendingExecutions, max: tuning.maxPendingExecutions, maxRunWeight: runWeightUnder(tuning) } }),
    });
    // Stopped first: the batch in hand finishes and commits while the producers are still connected.
    cleanups.push(async () => {
      if (!(await consumer.stop())) brokerSilent = true;
    });
    await consumer.start();
    log.info(
      { brokers: config.brokers, topic: config.factsTopic, group_id: config.groupId, mode: output.mode, streaming: config.streaming },
      'Kafka pipeline started',
    );

    let stopping: Promise<void> | undefined;
    return {
      stop: () => {
        stopping ??= closeAll().then(() => log.info('Kafka pipeline stopped'));
        return stopping;
      },
      state: () => {
        const state = consumer.state();
        return {
          ...state,
          ready: consumerReady(state),
          mode: output.mode,
          streaming: config.streaming,
          group_id: config.groupId,
          topic: config.factsTopic,
        };
      },
      lag: () => readLag(admin, config.groupId, config.factsTopic),
      publishRuleChange: async (change) => {
        if (changelog === undefined) throw new Error('the rule changelog is not running: no rule catalog was given');
        await changelog.publish(change);
      },
    };
  } catch (error) {
    await closeAll();
    throw error;
  }
}

async function startChangelog(
  kafka: Kafka,
  admin: Admin,
  topic: string,
  instanceId: string,
  deps: KafkaPipelineDeps,
  log: Logger,
): Promise<RuleChangelog> {
  const rules = deps.rules!;
  const changelog = new RuleChangelog({
    kafka,
    admin,
    topic,
    groupId: `${deps.config.groupId}.changelog.${instanceId}`,
    reload: (revision) => rules.reload(revision),
    logger: log.child({ topic }),
  });
  await changelog.start();
  return changelog;
}

/** What the results and dead-letter topics take, read in one request (a broker that does not say leaves the defaults). */
interface TopicLimits {
  /** KAFKA_MAX_RESULT_BYTES, lowered (with a warning) to what an existing results topic takes, so such a result is dead-lettered. */
  maxResultBytes: number;
  maxResultBytesSource?: string;
  /** The most bytes one record batch to the results topic may hold. */
  resultBatchBytes: number;
  /** The most bytes one record batch to the dead-letter topic may hold. */
  deadLetterBatchBytes: number;
}

async function topicLimits(admin: Admin, config: KafkaConfig, log: Logger): Promise<TopicLimits> {
  const [resultTopicBytes, dlqTopicBytes] = await maxMessageBytesOf(admin, [config.resultsTopic, config.dlqTopic]).catch(
    (error: unknown) => {
      log.warn(
        { err: error, topics: [config.resultsTopic, config.dlqTopic] },
        "the results and dead-letter topics' max.message.bytes could not be read; KAFKA_MAX_RESULT_BYTES stands, and the dead-letter topic is taken to be as created",
      );
      return [undefined, undefined];
    },
  );
  const limits = {
    maxResultBytes: config.maxResultBytes,
    resultBatchBytes: resultBatchBytes(config.maxResultBytes, resultTopicBytes),
    deadLetterBatchBytes: deadLetterBatchBytes(dlqTopicBytes),
  };
  const topicLimit = resultTopicBytes === undefined ? undefined : resultTopicBytes - resultHeadroom(resultTopicBytes);
  if (topicLimit === undefined || topicLimit >= config.maxResultBytes) return limits;
  log.warn(
    { topic: config.resultsTopic, configured: config.maxResultBytes, topic_allows: topicLimit },
    "the results topic takes smaller messages than KAFKA_MAX_RESULT_BYTES: larger results are dead-lettered at the topic's limit (raise its max.message.bytes to publish them)",
  );
  return { ...limits, maxResultBytes: topicLimit, maxResultBytesSource: "the results topic's max.message.bytes" };
}
