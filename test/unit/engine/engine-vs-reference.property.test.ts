import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ConditionNode } from '../../../src/contracts/condition-dsl.ts';
import { compileCondition, RuleEngine, validateCondition } from '../../../src/engine/index.ts';
import { conditionArb, DOMAINS, denseFactsArb, factsArb, indexableConditionArb, rulesArb, TINY_POOL } from '../../helpers/random-rules.ts';
import { referenceEvaluate, referenceMatches } from '../../helpers/reference-evaluator.ts';

// Fixed seeds keep CI reproducible; a failure prints the shrunk counterexample.
const SCOPES = [undefined, ...DOMAINS, 'no-such-domain'];
const DENSE_FIELDS = ['a', 'b', 'n', 's'];

describe('the indexed engine agrees with the reference evaluator', () => {
  it('on fired_rules and actions, for every domain and for all domains (2,000 random rule sets)', () => {
    fc.assert(
      fc.property(rulesArb(), fc.array(factsArb, { minLength: 1, maxLength: 4 }), (rules, factsList) => {
        const engine = RuleEngine.compile(rules);
        for (const facts of factsList) {
          for (const domain of SCOPES) {
            const { fired_rules, actions } = engine.evaluate(facts, domain === undefined ? undefined : { domain });
            expect({ fired_rules, actions }).toEqual(referenceEvaluate(rules, facts, domain));
          }
        }
      }),
      { seed: 20_240_611, numRuns: 2_000 },
    );
  });

  it('on rule sets made only of indexable conjunctions with many shared tests (500 random rule sets)', () => {
    fc.assert(
      fc.property(
        rulesArb({ condition: indexableConditionArb(DENSE_FIELDS, TINY_POOL), minRules: 10, maxRules: 60 }),
        fc.array(denseFactsArb(DENSE_FIELDS, TINY_POOL), { minLength: 1, maxLength: 10 }),
        (rules, factsList) => {
          const engine = RuleEngine.compile(rules);
          for (const facts of factsList) {
            expect(engine.evaluate(facts)).toMatchObject(referenceEvaluate(rules, facts));
            expect(engine.evaluate(facts, { domain: 'd1' })).toMatchObject(referenceEvaluate(rules, facts, 'd1'));
          }
        },
      ),
      { seed: 7, numRuns: 500 },
    );
  });

  it("on explain's matched, for enabled and disabled rules alike (1,000 random rule sets)", () => {
    fc.assert(
      fc.property(rulesArb({ maxRules: 8 }), factsArb, (rules, facts) => {
        const engine = RuleEngine.compile(rules);
        for (const rule of rules) {
          const explanation = engine.explain(rule.id, facts);
          expect(explanation?.matched).toBe(referenceMatches(rule.condition_dsl as ConditionNode, facts));
          if (explanation?.matched) expect(explanation.failing_conditions).toEqual([]);
          else expect(explanation?.failing_conditions.length).toBeGreaterThan(0);
        }
      }),
      { seed: 99, numRuns: 1_000 },
    );
  });

  it('on compileCondition closures and validity of every generated condition (1,000 random conditions)', () => {
    fc.assert(
      fc.property(conditionArb(), factsArb, (condition, facts) => {
        expect(validateCondition(condition)).toEqual({ valid: true, errors: [] });
        expect(compileCondition(condition)(facts)).toBe(referenceMatches(condition, facts));
      }),
      { seed: 1_234, numRuns: 1_000 },
    );
  });
});
