// Our DSL as json-rules-engine conditions, with operators that keep our semantics (no coercion, missing field is false).
import { Operator, type TopLevelCondition } from 'json-rules-engine';
import { CANONICAL_OPERATOR, type CanonicalOperator, type ConditionNode } from '../../src/contracts/condition-dsl.ts';
import { compare, REGEX_MAX_INPUT_LENGTH } from './reference-evaluator.ts';

type AllCondition = Extract<TopLevelCondition, { all: unknown }>;
/** Any condition json-rules-engine accepts inside all/any/not. */
export type NestedCondition = AllCondition['all'][number];

/** Thrown for DSL json-rules-engine cannot express (array quantifiers). */
export class TranslationError extends Error {
  override name = 'TranslationError';
}

/** json-rules-engine operator for each DSL operator: its built-ins where they agree with the DSL, ours otherwise. */
export const JRE_OPERATOR = {
  '==': 'equal',
  '!=': 'notEqual',
  '>': 'greaterThan',
  '>=': 'greaterThanInclusive',
  '<': 'lessThan',
  '<=': 'lessThanInclusive',
  in: 'in',
  not_in: 'notIn',
  contains: 'contains',
  not_contains: 'doesNotContain',
  starts_with: 'startsWith',
  ends_with: 'endsWith',
  regex: 'matches',
  between: 'between',
} as const satisfies Record<CanonicalOperator, string>;

const EXISTS_OPERATOR = 'exists';
const CONTAINER_OPERATOR = 'isContainer';
const MISSING_OPERATOR = 'isMissing';

/** Built-ins kept as they are: `a === b` and `b.indexOf(a) > -1` are already false for a missing (undefined) field. */
const BUILT_IN_KEPT: ReadonlySet<string> = new Set(['equal', 'in']);

/**
 * Operators to register with `engine.addOperator`. The built-in notEqual/notIn/doesNotContain are true for an undefined
 * fact, the ordering built-ins coerce strings to numbers and contains rejects strings, so those are replaced.
 */
export function dslOperators(): Operator[] {
  const regexCache = new Map<string, RegExp>();
  const operators: Operator[] = [];
  for (const [dslOp, name] of Object.entries(JRE_OPERATOR) as Array<[CanonicalOperator, string]>) {
    if (BUILT_IN_KEPT.has(name)) continue;
    if (dslOp === 'regex') {
      operators.push(
        new Operator(name, (actual: unknown, pattern: string) => {
          if (typeof actual !== 'string' || actual.length > REGEX_MAX_INPUT_LENGTH) return false;
          let regex = regexCache.get(pattern);
          if (regex === undefined) {
            regex = new RegExp(pattern);
            regexCache.set(pattern, regex);
          }
          return regex.test(actual);
        }),
      );
      continue;
    }
    operators.push(new Operator(name, (actual: unknown, expected: never) => actual !== undefined && compare(dslOp, actual, expected)));
  }
  operators.push(new Operator(EXISTS_OPERATOR, (actual: unknown) => actual !== undefined && actual !== null));
  operators.push(new Operator(MISSING_OPERATOR, (actual: unknown) => actual === undefined));
  operators.push(new Operator(CONTAINER_OPERATOR, (actual: unknown) => typeof actual === 'object' && actual !== null));
  return operators;
}

/** The rule's top-level condition; json-rules-engine needs all/any/not at the top, so a bare test is wrapped in all. */
export function translateCondition(node: ConditionNode): TopLevelCondition {
  const translated = translateNode(node, 'root');
  return isTopLevel(translated) ? translated : { all: [translated] };
}

function translateNode(node: ConditionNode, where: string): NestedCondition {
  switch (node.type) {
    case 'condition':
      return fieldTest(node.field, JRE_OPERATOR[CANONICAL_OPERATOR[node.op]], node.value);
    case 'exists':
      return fieldTest(node.field, EXISTS_OPERATOR, true);
    case 'and':
      return { all: node.children.map((child, index) => translateNode(child, `${where}.children[${index}]`)) };
    case 'or':
      return { any: node.children.map((child, index) => translateNode(child, `${where}.children[${index}]`)) };
    case 'not':
      return { not: translateNode(node.child, `${where}.child`) };
    case 'any':
    case 'all':
      throw new TranslationError(`${where}: json-rules-engine has no array quantifier, cannot translate "${node.type}" over ${node.field}`);
    case 'accumulate':
      throw new TranslationError(`${where}: json-rules-engine has no working memory, cannot translate "accumulate"`);
  }
}

/**
 * A top-level field is a json-rules-engine fact. For a.b.c the fact's own "a.b.c" key wins (DSL contract); otherwise it
 * is fact "a" with path "b.c". json-rules-engine hands back the root itself when the root is a primitive or null, so the
 * path branch first checks the root is an object or array: then a.b on a primitive reads as missing.
 */
function fieldTest(field: string, operator: string, value: unknown): NestedCondition {
  const dot = field.indexOf('.');
  if (dot === -1) return { fact: field, operator, value };
  const root = field.slice(0, dot);
  return {
    any: [
      { fact: field, operator, value },
      {
        all: [
          { fact: field, operator: MISSING_OPERATOR, value: true },
          { fact: root, operator: CONTAINER_OPERATOR, value: true },
          { fact: root, path: field.slice(dot + 1), operator, value },
        ],
      },
    ],
  };
}

function isTopLevel(condition: NestedCondition): condition is TopLevelCondition {
  return 'all' in condition || 'any' in condition || 'not' in condition;
}
