// The rules the engine evaluates: compiled from the store, swapped atomically on every change, here or on another instance.
import { setTimeout as sleep } from 'node:timers/promises';
import type { RuleChangeMessage } from '../contracts/kafka-messages.ts';
import type { RuleInput } from '../contracts/rule.ts';
import { type EngineMetrics, LiveEngine, RuleEngine } from '../engine/index.ts';
import type { RulesRepository, StoredRule } from '../store/types.ts';

export type RuleChange = RuleChangeMessage;
export type RuleChangeListener = (change: RuleChange) => void;

export interface RuleCatalogOptions {
  rules: Pick<RulesRepository, 'snapshot'>;
  /** Opt-in engine collector, handed to every compiled engine. */
  metrics?: EngineMetrics;
  /** Tells the caller a listener threw; listeners never break a change. */
  onListenerError?: (error: unknown) => void;
  /** Tells the caller the engine could not be reloaded after a committed change; it keeps trying in the background. */
  onReloadError?: (error: unknown) => void;
}

/** Waits between background reloads after a committed change could not be loaded (the database away for a moment). */
const RELOAD_RETRY_MS = { initial: 200, max: 5_000 } as const;

/** A stored rule as the engine takes it: storage fields (version, timestamps) dropped, a null description left out. */
export function toRuleInput(rule: StoredRule): RuleInput {
  return {
    id: rule.id,
    name: rule.name,
    domain: rule.domain,
    condition_dsl: rule.condition_dsl,
    action: rule.action,
    priority: rule.priority,
    enabled: rule.enabled,
    ...(rule.description === undefined || rule.description === null ? {} : { description: rule.description }),
    ...(rule.tags === undefined ? {} : { tags: rule.tags }),
  };
}

export class RuleCatalog {
  readonly #options: RuleCatalogOptions;
  readonly #live: LiveEngine;
  readonly #listeners = new Set<RuleChangeListener>();
  // Reloads run one at a time; a request for a revision already reached returns at once.
  #queue: Promise<void> = Promise.resolve();
  #catchingUp = false;
  #catchUpTo = 0;

  private constructor(options: RuleCatalogOptions, live: LiveEngine) {
    this.#options = options;
    this.#live = live;
  }

  /** Loads and compiles every stored rule. */
  static async open(options: RuleCatalogOptions): Promise<RuleCatalog> {
    const { revision, rules } = await load(options.rules);
    const engine = RuleEngine.compile(rules, { revision, metrics: options.metrics, stored: true });
    return new RuleCatalog(options, new LiveEngine(engine));
  }

  /** The engine evaluations use now; read it once per request so a request sees one revision. */
  get engine(): RuleEngine {
    return this.#live.current;
  }

  get revision(): number {
    return this.#live.current.revision;
  }

  /**
   * Brings the engine to at least `revision` (undefined: the store's latest) by recompiling from the store.
   * The Kafka rule changelog calls this for changes made on other instances.
   */
  reload(revision?: number): Promise<void> {
    const run = this.#queue.then(() => this.#reloadNow(revision));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /**
   * A change was committed through this instance: reload to its revision, then tell the listeners (e.g. the changelog).
   * Never fails: the change is stored, and answering it as failed would have the caller make it again. A reload that
   * fails is reported and tried again in the background until the engine reaches the revision.
   */
  async changed(change: Omit<RuleChange, 'at'>): Promise<void> {
    try {
      await this.reload(change.revision);
    } catch (error) {
      this.#options.onReloadError?.(error);
      this.#catchUpInBackground(change.revision);
    } finally {
      this.#emit({ ...change, at: new Date().toISOString() });
    }
  }

  /** One background loop at a time, aiming at the highest revision asked for. */
  #catchUpInBackground(revision: number): void {
    this.#catchUpTo = Math.max(this.#catchUpTo, revision);
    if (this.#catchingUp) return;
    this.#catchingUp = true;
    void (async () => {
      // Until the engine holds the highest revision asked for, including any asked for while this loop ran.
      for (
        let delayMs: number = RELOAD_RETRY_MS.initial;
        this.revision < this.#catchUpTo;
        delayMs = Math.min(delayMs * 2, RELOAD_RETRY_MS.max)
      ) {
        await sleep(delayMs);
        try {
          await this.reload(this.#catchUpTo);
        } catch (error) {
          this.#options.onReloadError?.(error);
        }
      }
      this.#catchingUp = false;
    })();
  }

  /** Registers a listener for changes made through this instance; returns the function that removes it. */
  onChange(listener: RuleChangeListener): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  async #reloadNow(revision: number | undefined): Promise<void> {
    if (revision !== undefined && this.revision >= revision) return;
    const loaded = await load(this.#options.rules);
    if (loaded.revision <= this.revision) return;
    this.#live.swap(RuleEngine.compile(loaded.rules, { revision: loaded.revision, metrics: this.#options.metrics, stored: true }));
  }

  #emit(change: RuleChange): void {
    for (const listener of this.#listeners) {
      try {
        listener(change);
      } catch (error) {
        this.#options.onListenerError?.(error);
      }
    }
  }
}

/** The rules and their revision, read together: the engine is labelled with exactly the revision its rules make up. */
async function load(rules: RuleCatalogOptions['rules']): Promise<{ revision: number; rules: RuleInput[] }> {
  const snapshot = await rules.snapshot();
  return { revision: snapshot.revision, rules: snapshot.rules.map(toRuleInput) };
}
