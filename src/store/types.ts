// The persistence interfaces the use cases depend on; the SQL implementations live beside this file, one per repository.
import type { ConditionNode } from '../contracts/condition-dsl.ts';
import type { Rule } from '../contracts/rule.ts';

/** A rule as stored: the engine's rule plus its version and timestamps (ISO 8601). */
export interface StoredRule extends Rule {
  version: number;
  created_at: string;
  updated_at: string;
}

/** What a caller writes; the store assigns id, version and timestamps. Defaults: domain "default", priority 0, enabled true. */
export interface RuleDraft {
  name: string;
  domain?: string;
  condition_dsl: ConditionNode;
  action: string;
  priority?: number;
  enabled?: boolean;
  description?: string | null;
  tags?: string[];
}

export interface RuleVersion {
  rule_id: number;
  version: number;
  /** What produced this version; a deleted rule's last version is 'delete' (its snapshot as it was when deleted). */
  change: AuditAction;
  rule: StoredRule;
  changed_at: string;
  actor: string;
}

export interface Page<T> {
  items: T[];
  /** Opaque cursor for the next page, null on the last page. */
  next_cursor: string | null;
}

export interface RuleFilter {
  domain?: string;
  enabled?: boolean;
  tag?: string;
  limit: number;
  cursor?: string;
}

/**
 * The versions a change may apply to (HTTP If-Match): at any other version the change is refused with PRECONDITION_FAILED,
 * checked under the revision lock, so two clients editing the same version cannot both win. Absent: any version.
 */
export type VersionCondition = readonly number[];

/** The result of a change: the entity and the store-wide rule revision the change produced. */
export interface Change<T> {
  value: T;
  revision: number;
}

/**
 * Rules. Every mutation runs in one transaction with its audit entry and bumps the store-wide revision.
 * Name clashes within a domain throw AppError CONFLICT; a malformed cursor throws AppError VALIDATION_ERROR.
 */
export interface RulesRepository {
  create(draft: RuleDraft, actor: string): Promise<Change<StoredRule>>;
  get(id: number): Promise<StoredRule | undefined>;
  list(filter: RuleFilter): Promise<Page<StoredRule>>;
  /** Every rule, enabled or not. */
  all(): Promise<StoredRule[]>;
  /** Every rule and the revision they make up, read in one snapshot: what the engine is compiled from. */
  snapshot(): Promise<{ revision: number; rules: StoredRule[] }>;
  /** Full replacement (PUT); undefined when the rule does not exist. */
  replace(id: number, draft: RuleDraft, actor: string, ifVersion?: VersionCondition): Promise<Change<StoredRule> | undefined>;
  /** Partial update (PATCH) of the given fields; undefined when the rule does not exist. */
  update(id: number, patch: Partial<RuleDraft>, actor: string, ifVersion?: VersionCondition): Promise<Change<StoredRule> | undefined>;
  /** False when the rule does not exist. */
  delete(id: number, actor: string, ifVersion?: VersionCondition): Promise<Change<true> | undefined>;
  /** All versions, oldest first; undefined when the rule never existed. */
  versions(id: number): Promise<RuleVersion[] | undefined>;
  /** The store-wide revision: bumped by every change to rules or rulesets. 0 for an empty store. */
  revision(): Promise<number>;
}

export interface Ruleset {
  id: number;
  name: string;
  domain: string;
  description: string | null;
  created_at: string;
  updated_at: string;
}

export interface RulesetDraft {
  name: string;
  domain: string;
  description?: string | null;
}

/** Rulesets: named views of one domain's rules. Names are unique (AppError CONFLICT). */
export interface RulesetsRepository {
  create(draft: RulesetDraft, actor: string): Promise<Change<Ruleset>>;
  get(id: number): Promise<Ruleset | undefined>;
  list(filter: { limit: number; cursor?: string }): Promise<Page<Ruleset>>;
}

export interface ExecutionRecord {
  execution_id: string;
  source: 'http' | 'bulk' | 'kafka' | 'session';
  domain: string | null;
  facts: unknown;
  fired_rules: number[];
  actions: string[];
  latency_ms: number;
  revision: number;
  created_at: string;
}

/**
 * An execution handed over as JSON texts its caller already holds (the request it answered and the outcome it sent), so
 * recording serializes nothing again on the request path. Read back, it is the ExecutionRecord those texts describe.
 */
export interface SerializedExecution {
  /** A UUID v7 whose time is createdMs (newExecutionId(createdMs)): the store finds the record through it. */
  execution_id: string;
  source: ExecutionRecord['source'];
  domain: string | null;
  /** Epoch milliseconds, a whole number: created_at is made from it. */
  createdMs: number;
  /** JSON text of an object whose `facts` member holds the facts evaluated (the request body); other members are kept but not read. */
  requestJson: string;
  /** JSON text of an object with the outcome's execution_id, fired_rules, actions, latency_ms and revision. */
  outcomeJson: string;
}

/**
 * Executions. `record` never waits for the database: writes are batched and flushed in the background,
 * yet `get` sees a recorded execution at once (it reads the pending batch first).
 */
export interface ExecutionsRepository {
  record(execution: ExecutionRecord | SerializedExecution): void;
  get(id: string): Promise<ExecutionRecord | undefined>;
  /** Writes everything pending; called on shutdown and by tests. */
  flush(): Promise<void>;
  /** Recorded executions not yet written: lets a transport slow down while the database falls behind. */
  pendingCount(): number;
  /** JSON bytes of the records pendingCount counts. */
  pendingBytes(): number;
  /** Bytes the writer's batch buffers keep reserved (the batch taking records, those being written, spares). */
  reservedBytes(): number;
  /** Deletes executions older than the cutoff; returns how many. */
  deleteOlderThan(cutoff: Date): Promise<number>;
  close(): Promise<void>;
}

export type AuditAction = 'create' | 'update' | 'delete';
export type AuditEntityType = 'rule' | 'ruleset';

export interface AuditEntry {
  id: number;
  at: string;
  actor: string;
  action: AuditAction;
  entity_type: AuditEntityType;
  entity_id: number;
  before: unknown;
  after: unknown;
  prev_hash: string;
  hash: string;
}

export interface AuditFilter {
  entity_type?: AuditEntityType;
  entity_id?: number;
  action?: AuditAction;
  since?: Date;
  until?: Date;
  limit: number;
  cursor?: string;
}

/** The audit trail, appended inside the transaction of each change and chained by SHA-256 hashes. */
export interface AuditRepository {
  /** Newest first. */
  list(filter: AuditFilter): Promise<Page<AuditEntry>>;
  /** Recomputes the whole chain. */
  verify(): Promise<{ valid: boolean; entries: number; first_invalid_id?: number }>;
}

/** Everything the service persists, opened once per process. */
export interface Store {
  rules: RulesRepository;
  rulesets: RulesetsRepository;
  executions: ExecutionsRepository;
  audit: AuditRepository;
  /** Ping for /health/ready. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}
