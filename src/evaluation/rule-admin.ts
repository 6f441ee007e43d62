// Rule and ruleset management: check the DSL, write through the store, and bring the engine to the change's revision.
import type { ConditionNode } from '../contracts/condition-dsl.ts';
import type { RuleEngine } from '../engine/index.ts';
import { AppError } from '../errors.ts';
import type {
  Page,
  RuleDraft,
  RuleFilter,
  Ruleset,
  RulesetDraft,
  RuleVersion,
  Store,
  StoredRule,
  VersionCondition,
} from '../store/types.ts';
import { assertValidCondition } from './dsl-errors.ts';
import type { RuleCatalog } from './rule-catalog.ts';

/** A rule as a transport received it: the DSL is unchecked until the use case validates it. */
export type RuleDraftInput = Omit<RuleDraft, 'condition_dsl'> & { condition_dsl: unknown };

/** A ruleset with the size of its domain in the current engine. */
export interface RulesetView extends Ruleset {
  rule_count: number;
  revision: number;
}

export interface RuleAdminOptions {
  store: Pick<Store, 'rules' | 'rulesets'>;
  catalog: Pick<RuleCatalog, 'changed' | 'engine' | 'revision'>;
}

function checkedDraft(draft: RuleDraftInput): RuleDraft {
  assertValidCondition(draft.condition_dsl);
  return { ...draft, condition_dsl: draft.condition_dsl as ConditionNode };
}

function ruleNotFound(id: number): AppError {
  return new AppError('RULE_NOT_FOUND', `Rule ${id} does not exist.`);
}

export class RuleAdmin {
  readonly #store: RuleAdminOptions['store'];
  readonly #catalog: RuleAdminOptions['catalog'];
  // Rule counts per domain, computed once per compiled engine.
  readonly #counts = new WeakMap<RuleEngine, Map<string, number>>();

  constructor(options: RuleAdminOptions) {
    this.#store = options.store;
    this.#catalog = options.catalog;
  }

  async createRule(draft: RuleDraftInput, actor: string): Promise<StoredRule> {
    const change = await this.#store.rules.create(checkedDraft(draft), actor);
    await this.#catalog.changed({ revision: change.revision, rule_id: change.value.id, change: 'create' });
    return change.value;
  }

  async getRule(id: number): Promise<StoredRule> {
    const rule = await this.#store.rules.get(id);
    if (rule === undefined) throw ruleNotFound(id);
    return rule;
  }

  listRules(filter: RuleFilter): Promise<Page<StoredRule>> {
    return this.#store.rules.list(filter);
  }

  async replaceRule(id: number, draft: RuleDraftInput, actor: string, ifVersion?: VersionCondition): Promise<StoredRule> {
    const change = await this.#store.rules.replace(id, checkedDraft(draft), actor, ifVersion);
    if (change === undefined) throw ruleNotFound(id);
    await this.#catalog.changed({ revision: change.revision, rule_id: id, change: 'update' });
    return change.value;
  }

  async updateRule(id: number, patch: Partial<RuleDraftInput>, actor: string, ifVersion?: VersionCondition): Promise<StoredRule> {
    if (patch.condition_dsl !== undefined) assertValidCondition(patch.condition_dsl);
    const change = await this.#store.rules.update(id, patch as Partial<RuleDraft>, actor, ifVersion);
    if (change === undefined) throw ruleNotFound(id);
    await this.#catalog.changed({ revision: change.revision, rule_id: id, change: 'update' });
    return change.value;
  }

  async deleteRule(id: number, actor: string, ifVersion?: VersionCondition): Promise<void> {
    const change = await this.#store.rules.delete(id, actor, ifVersion);
    if (change === undefined) throw ruleNotFound(id);
    await this.#catalog.changed({ revision: change.revision, rule_id: id, change: 'delete' });
  }

  async ruleVersions(id: number): Promise<RuleVersion[]> {
    const versions = await this.#store.rules.versions(id);
    if (versions === undefined) throw ruleNotFound(id);
    return versions;
  }

  async createRuleset(draft: RulesetDraft, actor: string): Promise<RulesetView> {
    const change = await this.#store.rulesets.create(draft, actor);
    // A ruleset changes no rule, but it bumps the store revision the engine reports.
    await this.#catalog.changed({ revision: change.revision, rule_id: null, change: 'reload' });
    return this.#view(change.value);
  }

  async getRuleset(id: number): Promise<RulesetView> {
    const ruleset = await this.#store.rulesets.get(id);
    if (ruleset === undefined) throw new AppError('NOT_FOUND', `Ruleset ${id} does not exist.`);
    return this.#view(ruleset);
  }

  async listRulesets(filter: { limit: number; cursor?: string }): Promise<Page<RulesetView>> {
    const page = await this.#store.rulesets.list(filter);
    return { items: page.items.map((ruleset) => this.#view(ruleset)), next_cursor: page.next_cursor };
  }

  #view(ruleset: Ruleset): RulesetView {
    const engine = this.#catalog.engine;
    let counts = this.#counts.get(engine);
    if (counts === undefined) {
      counts = new Map();
      for (const rule of engine.rules()) counts.set(rule.domain, (counts.get(rule.domain) ?? 0) + 1);
      this.#counts.set(engine, counts);
    }
    // In the documented field order.
    return {
      id: ruleset.id,
      name: ruleset.name,
      domain: ruleset.domain,
      description: ruleset.description,
      rule_count: counts.get(ruleset.domain) ?? 0,
      revision: engine.revision,
      created_at: ruleset.created_at,
      updated_at: ruleset.updated_at,
    };
  }
}
