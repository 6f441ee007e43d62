// Equality gates as a discrimination trie: one hash lookup per field finds every rule whose `==`/`in` tests all hold.
import type { Scalar } from '../contracts/condition-dsl.ts';
import type { EqualityTest, GatePlan } from './gate-plan.ts';

/** Map keys are compared with SameValueZero, so "5", 5, true and null are distinct keys, as `==` requires. */
export interface TrieEdge {
  readonly slot: number;
  /** A child with edges of its own is a node; a child that only ends entries is its offset in the leaf data (see sealTrie). */
  readonly children: Map<unknown, TrieNode | number>;
}

export interface TrieNode {
  /** Entries (the network's ids for rule gates) whose selected equality tests all hold once this node is reached; emptied by sealTrie. */
  entries: number[];
  /** Offset of this node's block in the leaf data, -1 when none (set by sealTrie). */
  leaf: number;
  /** Leaves share one empty list; a node gets its own on its first edge. */
  edges: TrieEdge[];
}

const NO_EDGES: TrieEdge[] = [];
const NO_ENTRIES: number[] = [];

/** A rule's `in` lists multiply into trie paths; beyond this product the remaining tests are left to the closure. */
const MAX_PATHS_PER_RULE = 256;
/** Beyond this many fields a gate prunes no further; the remaining equalities are left to the residual. */
const MAX_KEYS_PER_GATE = 8;

/** Orders fields for the trie: more distinct values first, so the first lookup prunes most. */
export class FieldOrder {
  readonly #rank = new Map<string, number>();

  constructor(plans: Iterable<GatePlan>) {
    const distinct = new Map<string, Set<Scalar>>();
    for (const plan of plans) {
      for (const alternative of plan.alternatives ?? []) {
        for (const test of alternative.equalities) {
          let values = distinct.get(test.field);
          if (values === undefined) {
            values = new Set();
            distinct.set(test.field, values);
          }
          for (const value of test.values) values.add(value);
        }
      }
    }
    const fields = [...distinct.entries()].sort((a, b) => b[1].size - a[1].size || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    for (const [index, [field]] of fields.entries()) this.#rank.set(field, index);
  }

  rank(field: string): number {
    return this.#rank.get(field) ?? Number.MAX_SAFE_INTEGER;
  }
}

/** The equality tests one alternative is indexed by: one per field, in FieldOrder, while the path count stays bounded. */
export function selectKeys(equalities: readonly EqualityTest[], order: FieldOrder): EqualityTest[] {
  const perField = new Map<string, EqualityTest>();
  for (const test of equalities) {
    const known = perField.get(test.field);
    if (known === undefined || test.values.length < known.values.length) perField.set(test.field, test);
  }
  const sorted = [...perField.values()].sort((a, b) => order.rank(a.field) - order.rank(b.field));
  const selected: EqualityTest[] = [];
  let paths = 1;
  for (const test of sorted) {
    if (selected.length === MAX_KEYS_PER_GATE) break;
    if (selected.length > 0 && paths * test.values.length > MAX_PATHS_PER_RULE) continue;
    selected.push(test);
    paths *= test.values.length;
  }
  return selected;
}

export function emptyTrieNode(): TrieNode {
  return { entries: [], leaf: -1, edges: NO_EDGES };
}

/** Adds one entry under every combination of its selected keys' values (an empty `in` list adds nothing: it never holds). */
export function insertIntoTrie(
  node: TrieNode,
  keys: readonly EqualityTest[],
  slotOf: (field: string) => number,
  entry: number,
  depth = 0,
): void {
  const key = keys[depth];
  if (key === undefined) {
    node.entries.push(entry);
    return;
  }
  const slot = slotOf(key.field);
  let edge = node.edges.find((candidate) => candidate.slot === slot);
  if (edge === undefined) {
    edge = { slot, children: new Map() };
    node.edges = [...node.edges, edge];
  }
  for (const value of key.values) {
    let child = edge.children.get(value);
    if (typeof child !== 'object') {
      child = emptyTrieNode();
      edge.children.set(value, child);
    }
    insertIntoTrie(child, keys, slotOf, entry, depth + 1);
  }
}

/**
 * Writes every node's entries into one flat array, one block per node (its layout is `block`'s), and replaces each
 * child that has no edges by its offset there: reaching a leaf then reads one contiguous block instead of three objects.
 */
export function sealTrie(root: TrieNode, block: (entries: readonly number[], out: number[]) => void): Int32Array {
  const data: number[] = [];
  const place = (node: TrieNode): number => {
    if (node.entries.length === 0) return -1;
    const offset = data.length;
    block(node.entries, data);
    node.entries = NO_ENTRIES;
    return offset;
  };
  const seal = (node: TrieNode): void => {
    node.leaf = place(node);
    for (const edge of node.edges) {
      for (const [value, child] of edge.children) {
        if (typeof child === 'number') continue;
        if (child.edges.length === 0) edge.children.set(value, place(child));
        else seal(child);
      }
    }
  };
  seal(root);
  return Int32Array.from(data);
}
