// Short builders for DSL nodes, so generators read like the rules they produce.
import type { ConditionNode, ConditionValue, Operator } from '../../src/contracts/condition-dsl.ts';

export function leaf(field: string, op: Operator, value: ConditionValue): ConditionNode {
  return { type: 'condition', field, op, value };
}

export function and(...children: ConditionNode[]): ConditionNode {
  return { type: 'and', children };
}
