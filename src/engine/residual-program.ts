// What a candidate rule must still satisfy, as compact rows: confirming touches one small block, not a chain of closures.
import { CANONICAL_OPERATOR, type ConditionNode, type Scalar } from '../contracts/condition-dsl.ts';
import type { FactSlots } from './fact-slots.ts';
import type { Comparison } from './gate-plan.ts';
import { type OperatorOptions, type ValueTest, valueTest } from './operators.ts';

/** Row opcodes. Each row is [op, slot, a, b]; a and b are numbers, or indexes into refs for other operands. */
const OP = {
  END: 0,
  EQ_NUMBER: 1,
  EQ_REF: 2,
  NE_NUMBER: 3,
  NE_REF: 4,
  GT_NUMBER: 5,
  GE_NUMBER: 6,
  LT_NUMBER: 7,
  LE_NUMBER: 8,
  BETWEEN_NUMBER: 9,
  GT_STRING: 10,
  GE_STRING: 11,
  LT_STRING: 12,
  LE_STRING: 13,
  BETWEEN_STRING: 14,
  EXISTS: 15,
  CONTAINS: 16,
  NOT_CONTAINS: 17,
  STARTS_WITH: 18,
  ENDS_WITH: 19,
  TEST: 20,
} as const;

const ROW = 4;

/** Nodes rows can express: comparisons and exists on a path of the fact root. Everything else stays a closure. */
export type RowNode = Comparison | Extract<ConditionNode, { type: 'exists' }>;

export function isRowNode(node: ConditionNode): node is RowNode {
  return node.type === 'condition' || node.type === 'exists';
}

export class ResidualProgram {
  #rows: Float64Array = new Float64Array(0);
  readonly #pending: number[] = [];
  readonly #refs: unknown[] = [];
  readonly #refIndex = new Map<unknown, number>();
  /** Tests for `in`, `not_in` and `regex`, shared by every rule with the same operator and value. */
  readonly #testIndex = new Map<string, number>();
  readonly #slots: FactSlots;
  readonly #operators: OperatorOptions;

  constructor(slots: FactSlots, operators: OperatorOptions) {
    this.#slots = slots;
    this.#operators = operators;
  }

  #ref(value: unknown): number {
    let index = this.#refIndex.get(value);
    if (index === undefined) {
      index = this.#refs.length;
      this.#refs.push(value);
      this.#refIndex.set(value, index);
    }
    return index;
  }

  #row(op: number, field: string, a = 0, b = 0): void {
    this.#pending.push(op, this.#slots.slotOf(field), a, b);
  }

  #comparison(node: Comparison): void {
    const op = CANONICAL_OPERATOR[node.op];
    const value = node.value;
    switch (op) {
      case '==':
      case '!=': {
        const numeric = typeof value === 'number';
        const code = op === '==' ? (numeric ? OP.EQ_NUMBER : OP.EQ_REF) : numeric ? OP.NE_NUMBER : OP.NE_REF;
        this.#row(code, node.field, numeric ? value : this.#ref(value as Scalar));
        return;
      }
      case '>':
      case '>=':
      case '<':
      case '<=': {
        const numeric = typeof value === 'number';
        const index = ['>', '>=', '<', '<='].indexOf(op);
        this.#row((numeric ? OP.GT_NUMBER : OP.GT_STRING) + index, node.field, numeric ? value : this.#ref(value));
        return;
      }
      case 'between': {
        const [low, high] = value as [number, number] | [string, string];
        if (typeof low === 'number') this.#row(OP.BETWEEN_NUMBER, node.field, low, high as number);
        else this.#row(OP.BETWEEN_STRING, node.field, this.#ref(low), this.#ref(high));
        return;
      }
      case 'contains':
      case 'not_contains':
        this.#row(op === 'contains' ? OP.CONTAINS : OP.NOT_CONTAINS, node.field, this.#ref(value));
        return;
      case 'starts_with':
      case 'ends_with':
        this.#row(op === 'starts_with' ? OP.STARTS_WITH : OP.ENDS_WITH, node.field, this.#ref(value));
        return;
      default: {
        const key = `${op}\u0000${JSON.stringify(value)}`;
        let index = this.#testIndex.get(key);
        if (index === undefined) {
          index = this.#ref(valueTest(op, value, this.#operators));
          this.#testIndex.set(key, index);
        }
        this.#row(OP.TEST, node.field, index);
      }
    }
  }

  /** Adds the rows of one rule's residual; returns their offset, or -1 when there is nothing to check. */
  add(nodes: readonly RowNode[]): number {
    if (nodes.length === 0) return -1;
    const offset = this.#pending.length;
    for (const node of nodes) {
      if (node.type === 'exists') this.#row(OP.EXISTS, node.field);
      else this.#comparison(node);
    }
    this.#pending.push(OP.END, 0, 0, 0);
    return offset;
  }

  /** Freezes the rows once every rule is added. */
  seal(): void {
    this.#rows = Float64Array.from(this.#pending);
    this.#pending.length = 0;
    this.#refIndex.clear();
    this.#testIndex.clear();
  }

  /** Whether every row from offset holds for the current fact of `slots` (DSL operator semantics, see operators.ts). */
  run(offset: number): boolean {
    const rows = this.#rows;
    const refs = this.#refs;
    const slots = this.#slots;
    for (let i = offset; ; i += ROW) {
      const op = rows[i]!;
      if (op === OP.END) return true;
      const value = slots.value(rows[i + 1]!);
      const a = rows[i + 2]!;
      switch (op) {
        case OP.EQ_NUMBER:
          if (value !== a) return false;
          break;
        case OP.EQ_REF:
          if (value !== refs[a]) return false;
          break;
        case OP.NE_NUMBER:
          if (value === undefined || value === a) return false;
          break;
        case OP.NE_REF:
          if (value === undefined || value === refs[a]) return false;
          break;
        case OP.GT_NUMBER:
          if (typeof value !== 'number' || !(value > a)) return false;
          break;
        case OP.GE_NUMBER:
          if (typeof value !== 'number' || !(value >= a)) return false;
          break;
        case OP.LT_NUMBER:
          if (typeof value !== 'number' || !(value < a)) return false;
          break;
        case OP.LE_NUMBER:
          if (typeof value !== 'number' || !(value <= a)) return false;
          break;
        case OP.BETWEEN_NUMBER:
          if (typeof value !== 'number' || !(value >= a && value <= rows[i + 3]!)) return false;
          break;
        case OP.GT_STRING:
          if (typeof value !== 'string' || !(value > (refs[a] as string))) return false;
          break;
        case OP.GE_STRING:
          if (typeof value !== 'string' || !(value >= (refs[a] as string))) return false;
          break;
        case OP.LT_STRING:
          if (typeof value !== 'string' || !(value < (refs[a] as string))) return false;
          break;
        case OP.LE_STRING:
          if (typeof value !== 'string' || !(value <= (refs[a] as string))) return false;
          break;
        case OP.BETWEEN_STRING:
          if (typeof value !== 'string' || !(value >= (refs[a] as string) && value <= (refs[rows[i + 3]!] as string))) return false;
          break;
        case OP.EXISTS:
          if (value === undefined || value === null) return false;
          break;
        case OP.CONTAINS: {
          const expected = refs[a];
          if (
            Array.isArray(value)
              ? value.indexOf(expected) === -1
              : typeof value !== 'string' || typeof expected !== 'string' || !value.includes(expected)
          )
            return false;
          break;
        }
        case OP.NOT_CONTAINS: {
          const expected = refs[a];
          if (
            Array.isArray(value)
              ? value.indexOf(expected) !== -1
              : typeof value !== 'string' || typeof expected !== 'string' || value.includes(expected)
          )
            return false;
          break;
        }
        case OP.STARTS_WITH:
          if (typeof value !== 'string' || !value.startsWith(refs[a] as string)) return false;
          break;
        case OP.ENDS_WITH:
          if (typeof value !== 'string' || !value.endsWith(refs[a] as string)) return false;
          break;
        default:
          if (!(refs[a] as ValueTest)(value)) return false;
      }
    }
  }
}
