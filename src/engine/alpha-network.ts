// The alpha network of one rule scope (a domain, or all domains): finds candidate rules by index, then confirms them.
import type { Predicate } from './compile-condition.ts';
import { emptyTrieNode, insertIntoTrie, sealTrie, type TrieNode } from './equality-trie.ts';
import type { FactSlots } from './fact-slots.ts';
import type { EqualityTest, RangeTest } from './gate-plan.ts';
import { lowerSatisfied, type RangeField, type RangeSide, RangeSideBuilder, upperSatisfied } from './range-index.ts';
import type { ResidualProgram } from './residual-program.ts';

/**
 * One way a rule can become a candidate: all its selected equality keys hold, or all its range tests hold. An equality
 * gate may also name one numeric range test of its alternative (`range`): at its trie node the rule is then sorted by
 * that test's bound, and a fact reaches only the rules whose bound it satisfies.
 */
export type Gate =
  | { readonly kind: 'equality'; readonly keys: readonly EqualityTest[]; readonly range?: RangeTest | null }
  | { readonly kind: 'range'; readonly tests: readonly RangeTest[] };

/** The rules at one trie node that share a range field and side, sorted so a fact value satisfies a prefix of them. */
interface LeafRange {
  readonly slot: number;
  readonly lower: boolean;
  /** Links are network-local rules. */
  readonly side: RangeSide<number>;
}

/** A rule as the network sees it, given in fired order (priority descending, then id ascending). */
export interface NetworkRule {
  /** Null: no index can prune the rule, so it is confirmed on every fact. */
  readonly gates: readonly Gate[] | null;
  /** Offset of the residual rows that must still hold once a gate held (see ResidualProgram), or -1. */
  readonly rows: number;
  /** The residual conditions rows cannot express, or null. */
  readonly closure: Predicate | null;
  readonly id: number;
  /** The engine's index of the rule's action. */
  readonly action: number;
}

const MAX_GENERATION = 0xffff_fffe;
/** Flags of a rule: it has several gates (from `or`) so it can be reached twice; it has a residual closure. */
const MULTI_GATE = 1;
const HAS_CLOSURE = 2;
/** Per-rule metadata, one block per rule so that a candidate touches one cache line: rows offset, flags, id, action. */
const META = 4;

function rangeBuilders() {
  return {
    numberLower: new RangeSideBuilder<number>('lower'),
    numberUpper: new RangeSideBuilder<number>('upper'),
    stringLower: new RangeSideBuilder<string>('lower'),
    stringUpper: new RangeSideBuilder<string>('upper'),
  };
}

export class AlphaNetwork {
  /** Rules in scope; the network's local rule index i is the i-th rule in fired order. */
  readonly size: number;
  /** Average number of rules linked to each distinct indexed test; null when no rule has one. */
  readonly linkedRulesAvg: number | null;
  /** Candidate rules of the last fact: those the index did not rule out (confirmed by it, or checked further). */
  lastCandidates = 0;

  readonly #slots: FactSlots;
  readonly #program: ResidualProgram;
  readonly #trie: TrieNode = emptyTrieNode();
  /**
   * Rules ending at trie nodes, `[count, (local, rows, flags)..., ranges]` per node: the rules confirmed whenever the
   * node is reached, then the index in #leafRanges of the node's range-sorted rules (-1: none).
   */
  readonly #leafData: Int32Array;
  readonly #leafRanges: (readonly LeafRange[])[] = [];
  readonly #ranges: RangeField[] = [];
  readonly #fallback: Int32Array;
  readonly #meta: Int32Array;
  readonly #closures: (Predicate | null)[];
  readonly #entryRule: Int32Array;
  readonly #entryNeed: Uint16Array;
  readonly #entryStamp: Uint32Array;
  readonly #entryCount: Uint16Array;
  /** Scratch: gates whose every test held, and the satisfied prefix of each range side, for one fact. */
  readonly #fullGates: Int32Array;
  readonly #pendingLinks: Int32Array[] = [];
  readonly #pendingCounts: Int32Array;
  readonly #ruleStamp: Uint32Array;
  readonly #fired: Int32Array;
  /** Bit i set: local rule i fired for the current fact; cleared again by #orderFired. */
  readonly #firedBits: Int32Array;
  #firedCount = 0;
  #generation = 0;

  /** Slots and program are the engine's, shared by its networks; both are sealed by the engine after every network is built. */
  constructor(rules: readonly NetworkRule[], slots: FactSlots, program: ResidualProgram, measureSharing: boolean) {
    this.size = rules.length;
    this.#slots = slots;
    this.#program = program;
    const meta = new Int32Array(rules.length * META);
    rules.forEach((rule, local) => {
      meta[local * META] = rule.rows;
      meta[local * META + 1] = (rule.gates !== null && rule.gates.length > 1 ? MULTI_GATE : 0) | (rule.closure !== null ? HAS_CLOSURE : 0);
      meta[local * META + 2] = rule.id;
      meta[local * META + 3] = rule.action;
    });
    this.#meta = meta;
    this.#closures = rules.map((rule) => rule.closure);
    const slotOf = (field: string): number => slots.slotOf(field);
    const fallback: number[] = [];
    /** Per trie entry: the rule and the numeric range test that sorts it at its node (null: reached unsorted). */
    const trieEntries: { local: number; range: RangeTest | null }[] = [];
    const entryRule: number[] = [];
    const entryNeed: number[] = [];
    const ranges = new Map<number, ReturnType<typeof rangeBuilders>>();
    const equalityValues = new Map<number, Set<unknown>>();
    let equalityLinks = 0;
    rules.forEach((rule, local) => {
      if (rule.gates === null) {
        fallback.push(local);
        return;
      }
      for (const gate of rule.gates) {
        if (gate.kind === 'equality') {
          insertIntoTrie(this.#trie, gate.keys, slotOf, trieEntries.length);
          trieEntries.push({ local, range: gate.range ?? null });
          if (measureSharing) {
            for (const key of gate.keys) {
              const slot = slotOf(key.field);
              let values = equalityValues.get(slot);
              if (values === undefined) {
                values = new Set();
                equalityValues.set(slot, values);
              }
              for (const value of key.values) values.add(value);
              equalityLinks += key.values.length;
            }
          }
          continue;
        }
        const entry = entryRule.length;
        entryRule.push(local);
        entryNeed.push(gate.tests.length);
        for (const test of gate.tests) {
          const slot = slotOf(test.field);
          let builders = ranges.get(slot);
          if (builders === undefined) {
            builders = rangeBuilders();
            ranges.set(slot, builders);
          }
          if (typeof test.bound === 'number') {
            (test.side === 'lower' ? builders.numberLower : builders.numberUpper).add(test.bound, test.strict, entry);
          } else {
            (test.side === 'lower' ? builders.stringLower : builders.stringUpper).add(test.bound, test.strict, entry);
          }
        }
      }
    });
    let tests = 0;
    let links = equalityLinks;
    for (const values of equalityValues.values()) tests += values.size;
    for (const [slot, builders] of ranges) {
      for (const builder of Object.values(builders)) {
        tests += builder.counts.tests;
        links += builder.counts.links;
      }
      this.#ranges.push({
        slot,
        numberLower: builders.numberLower.build(),
        numberUpper: builders.numberUpper.build(),
        stringLower: builders.stringLower.build(),
        stringUpper: builders.stringUpper.build(),
      });
    }
    this.linkedRulesAvg = tests === 0 ? null : links / tests;
    this.#leafData = sealTrie(this.#trie, (entries, out) => {
      const unsorted: number[] = [];
      const sorted = new Map<string, { slot: number; lower: boolean; builder: RangeSideBuilder<number> }>();
      for (const entry of entries) {
        const { local, range } = trieEntries[entry]!;
        if (range === null) {
          unsorted.push(local, meta[local * META]!, meta[local * META + 1]!);
          continue;
        }
        const slot = slotOf(range.field);
        const key = `${slot}${range.side}`;
        let group = sorted.get(key);
        if (group === undefined) {
          group = { slot, lower: range.side === 'lower', builder: new RangeSideBuilder<number>(range.side) };
          sorted.set(key, group);
        }
        group.builder.add(range.bound as number, range.strict, local);
      }
      out.push(unsorted.length / 3);
      for (const value of unsorted) out.push(value);
      if (sorted.size === 0) {
        out.push(-1);
        return;
      }
      out.push(this.#leafRanges.length);
      this.#leafRanges.push([...sorted.values()].map(({ slot, lower, builder }) => ({ slot, lower, side: builder.build()! })));
    });
    this.#fallback = Int32Array.from(fallback);
    this.#entryRule = Int32Array.from(entryRule);
    this.#entryNeed = Uint16Array.from(entryNeed);
    this.#entryStamp = new Uint32Array(entryRule.length);
    this.#entryCount = new Uint16Array(entryRule.length);
    this.#fullGates = new Int32Array(entryRule.length);
    this.#pendingCounts = new Int32Array(this.#ranges.length * 2);
    this.#ruleStamp = new Uint32Array(rules.length);
    this.#fired = new Int32Array(rules.length);
    this.#firedBits = new Int32Array((rules.length + 31) >>> 5);
  }

  /** Local indexes of the rules that fired, ascending (= fired order); valid until the next call. */
  get fired(): Int32Array {
    return this.#fired;
  }

  /** Id of a local rule. */
  idOf(local: number): number {
    return this.#meta[local * META + 2]!;
  }

  /** Action index of a local rule. */
  actionOf(local: number): number {
    return this.#meta[local * META + 3]!;
  }

  /**
   * Matches one fact (already known to be an object) and returns how many rules fired; read them from `fired`.
   * Only exotic facts (throwing getters, proxies) can make it throw; the caller then uses matchSafely.
   */
  match(facts: object): number {
    this.#slots.begin(facts);
    this.#nextGeneration();
    this.#firedCount = 0;
    this.lastCandidates = 0;
    this.#visit(this.#trie, facts);
    if (this.#ranges.length > 0) this.#matchRanges(facts);
    const fallback = this.#fallback;
    for (let i = 0; i < fallback.length; i += 1) this.#candidateOf(fallback[i]!, facts);
    this.#slots.end();
    const count = this.#firedCount;
    if (count > 1) this.#orderFired(count);
    else if (count === 1) this.#firedBits[this.#fired[0]! >>> 5] = 0;
    return count;
  }

  /** Forgets a match that threw half way (exotic facts), so the next fact starts clean. */
  recover(): void {
    this.#firedBits.fill(0);
    this.#slots.end();
  }

  /** Puts the fired rules in fired order (ascending local index), leaving the fired bitset clear for the next fact. */
  #orderFired(count: number): void {
    const fired = this.#fired;
    const bits = this.#firedBits;
    if (count > 16 && bits.length <= count * 8) {
      // Dense: read the bitset word by word, lowest bit first.
      let next = 0;
      for (let word = 0; next < count; word += 1) {
        let set = bits[word]!;
        if (set === 0) continue;
        bits[word] = 0;
        while (set !== 0) {
          const lowest = set & -set;
          fired[next++] = (word << 5) | (31 - Math.clz32(lowest));
          set ^= lowest;
        }
      }
      return;
    }
    for (let i = 0; i < count; i += 1) bits[fired[i]! >>> 5] = 0;
    sortPrefix(fired, count);
  }

  #nextGeneration(): void {
    if (this.#generation >= MAX_GENERATION) {
      this.#generation = 0;
      this.#entryStamp.fill(0);
      this.#ruleStamp.fill(0);
    }
    this.#generation += 1;
  }

  #candidateOf(local: number, facts: object): void {
    this.#candidate(local, this.#meta[local * META]!, this.#meta[local * META + 1]!, facts);
  }

  /** A rule whose gate held: confirm its residual (rows, then closure) and record it as fired. */
  #candidate(local: number, rows: number, flags: number, facts: object): void {
    if ((flags & MULTI_GATE) !== 0) {
      if (this.#ruleStamp[local] === this.#generation) return;
      this.#ruleStamp[local] = this.#generation;
    }
    this.lastCandidates += 1;
    if (rows >= 0 || flags >= HAS_CLOSURE) {
      if (rows >= 0 && !this.#program.run(rows)) return;
      if ((flags & HAS_CLOSURE) !== 0 && !this.#closures[local]!(facts)) return;
    }
    this.#firedBits[local >>> 5]! |= 1 << (local & 31);
    this.#fired[this.#firedCount++] = local;
  }

  #visitLeaf(offset: number, facts: object): void {
    const data = this.#leafData;
    const end = offset + 1 + data[offset]! * 3;
    for (let i = offset + 1; i < end; i += 3) this.#candidate(data[i]!, data[i + 1]!, data[i + 2]!, facts);
    const ranges = data[end]!;
    if (ranges >= 0) this.#visitLeafRanges(this.#leafRanges[ranges]!, facts);
  }

  /** Confirms only the range-sorted rules whose bound the fact's value satisfies (a number; NaN satisfies none, as in rows). */
  #visitLeafRanges(ranges: readonly LeafRange[], facts: object): void {
    for (let r = 0; r < ranges.length; r += 1) {
      const range = ranges[r]!;
      const value = this.#slots.value(range.slot);
      if (typeof value !== 'number') continue;
      const satisfied = range.lower ? lowerSatisfied(range.side, value) : upperSatisfied(range.side, value);
      const links = range.side.links;
      for (let i = 0; i < satisfied; i += 1) this.#candidateOf(links[i]!, facts);
    }
  }

  #visit(node: TrieNode, facts: object): void {
    if (node.leaf >= 0) this.#visitLeaf(node.leaf, facts);
    const edges = node.edges;
    for (let i = 0; i < edges.length; i += 1) {
      const edge = edges[i]!;
      const value = this.#slots.value(edge.slot);
      if (value === undefined) continue;
      const child = edge.children.get(value);
      if (child === undefined) continue;
      if (typeof child === 'number') {
        if (child >= 0) this.#visitLeaf(child, facts);
      } else this.#visit(child, facts);
    }
  }

  /** Binary-searches every range field, then counts the satisfied tests per gate; full gates make candidates. */
  #matchRanges(facts: object): void {
    const ranges = this.#ranges;
    const pendingLinks = this.#pendingLinks;
    const pendingCounts = this.#pendingCounts;
    let sides = 0;
    let total = 0;
    for (let i = 0; i < ranges.length; i += 1) {
      const field = ranges[i]!;
      const value = this.#slots.value(field.slot);
      let lower = 0;
      let upper = 0;
      if (typeof value === 'number') {
        // NaN satisfies no ordering.
        if (Number.isNaN(value)) continue;
        if (field.numberLower !== null) lower = lowerSatisfied(field.numberLower, value);
        if (field.numberUpper !== null) upper = upperSatisfied(field.numberUpper, value);
        if (lower > 0) pendingLinks[sides] = field.numberLower!.links;
        if (upper > 0) pendingLinks[sides + (lower > 0 ? 1 : 0)] = field.numberUpper!.links;
      } else if (typeof value === 'string') {
        if (field.stringLower !== null) lower = lowerSatisfied(field.stringLower, value);
        if (field.stringUpper !== null) upper = upperSatisfied(field.stringUpper, value);
        if (lower > 0) pendingLinks[sides] = field.stringLower!.links;
        if (upper > 0) pendingLinks[sides + (lower > 0 ? 1 : 0)] = field.stringUpper!.links;
      } else continue;
      if (lower > 0) pendingCounts[sides++] = lower;
      if (upper > 0) pendingCounts[sides++] = upper;
      total += lower + upper;
    }
    if (sides === 0) return;
    const counts = this.#entryCount;
    const need = this.#entryNeed;
    const full = this.#fullGates;
    let fullCount = 0;
    if (total * 4 >= counts.length) {
      // Many links: clearing the counters is cheaper than stamping each one, and the loop has no unpredictable branch.
      counts.fill(0);
      for (let s = 0; s < sides; s += 1) {
        const links = pendingLinks[s]!;
        const satisfied = pendingCounts[s]!;
        for (let i = 0; i < satisfied; i += 1) {
          const entry = links[i]!;
          const count = counts[entry]! + 1;
          counts[entry] = count;
          if (count === need[entry]) full[fullCount++] = entry;
        }
      }
    } else {
      const stamp = this.#entryStamp;
      const generation = this.#generation;
      for (let s = 0; s < sides; s += 1) {
        const links = pendingLinks[s]!;
        const satisfied = pendingCounts[s]!;
        for (let i = 0; i < satisfied; i += 1) {
          const entry = links[i]!;
          let count = 1;
          if (stamp[entry] === generation) count = counts[entry]! + 1;
          else stamp[entry] = generation;
          counts[entry] = count;
          if (count === need[entry]) full[fullCount++] = entry;
        }
      }
    }
    const entryRule = this.#entryRule;
    for (let i = 0; i < fullCount; i += 1) this.#candidateOf(entryRule[full[i]!]!, facts);
  }
}

/** Sorts a prefix in place: insertion sort when short, typed-array sort otherwise. */
function sortPrefix(values: Int32Array, count: number): void {
  if (count > 16) {
    values.subarray(0, count).sort();
    return;
  }
  for (let i = 1; i < count; i += 1) {
    const value = values[i]!;
    let j = i - 1;
    while (j >= 0 && values[j]! > value) {
      values[j + 1] = values[j]!;
      j -= 1;
    }
    values[j + 1] = value;
  }
}
