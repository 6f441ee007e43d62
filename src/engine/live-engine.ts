// LiveEngine: the engine in service, swapped atomically so an evaluation always sees one whole rule set.
import type { RuleInput } from '../contracts/rule.ts';
import { type EngineOptions, RuleEngine } from './rule-engine.ts';

export class LiveEngine {
  #current: RuleEngine;

  constructor(initial: RuleEngine) {
    this.#current = initial;
  }

  /** The engine to evaluate with; read it once per evaluation. */
  get current(): RuleEngine {
    return this.#current;
  }

  /**
   * Compiles a new engine, then swaps it in. Its revision is options.revision when that is greater than the current
   * one, else current + 1, so revisions only increase. Throws (keeping the current engine) when the rules are invalid.
   */
  replace(rules: readonly RuleInput[], options: EngineOptions = {}): RuleEngine {
    const previous = this.#current.revision;
    const requested = options.revision;
    const revision = requested !== undefined && requested > previous ? requested : previous + 1;
    // compile is synchronous: nothing can swap in between, so the revision computed above is still the greatest.
    const next = RuleEngine.compile(rules, { ...options, revision });
    this.#current = next;
    return next;
  }

  /** Installs an engine compiled elsewhere; refused (false) unless its revision is greater than the current one. */
  swap(engine: RuleEngine): boolean {
    if (engine.revision <= this.#current.revision) return false;
    this.#current = engine;
    return true;
  }
}
