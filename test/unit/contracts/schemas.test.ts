import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { renderSchema, SCHEMAS, SCHEMAS_DIR } from '../../../scripts/generate-schemas.ts';
import { conditionNodeSchema } from '../../../src/contracts/condition-dsl.ts';
import { conditionArb } from '../../helpers/random-rules.ts';

describe('generated JSON Schemas', () => {
  it.each(SCHEMAS)('schemas/$file matches its zod contract (run `npm run schemas` after changing the contract)', (entry) => {
    const committed = readFileSync(new URL(entry.file, SCHEMAS_DIR), 'utf8');
    expect(committed).toBe(renderSchema(entry));
  });

  it('every schema is stamped as generated and compiles as draft 2020-12', () => {
    for (const entry of SCHEMAS) {
      const document = JSON.parse(renderSchema(entry));
      expect(document.$comment).toContain(`Generated from ${entry.source}`);
      expect(new Ajv2020({ strict: false }).validateSchema(document)).toBe(true);
    }
  });
});

describe('schemas/condition-dsl.schema.json', () => {
  const entry = SCHEMAS.find((candidate) => candidate.file === 'condition-dsl.schema.json');
  if (entry === undefined) throw new Error('condition-dsl.schema.json is not in the SCHEMAS table');
  const validate = new Ajv2020({ strict: false }).compile(JSON.parse(renderSchema(entry)));

  it('accepts every valid condition, recursion included', () => {
    fc.assert(
      fc.property(conditionArb(), (condition) => {
        expect(validate(condition)).toBe(true);
      }),
      { seed: 11, numRuns: 300 },
    );
  });

  it('rejects what the contract rejects structurally: unknown types, operators, keys, empty children, deep bad nodes', () => {
    const bad: unknown[] = [
      { type: 'xor' },
      { type: 'condition', field: 'a', op: 'zz', value: 1 },
      { type: 'exists', field: 'a', extra: true },
      { type: 'and', children: [] },
      { type: 'not', child: { type: 'any', field: 'items', condition: { type: 'exists', field: '' } } },
      { type: 'condition', field: 'a', op: '==', value: { nested: 1 } },
      5,
    ];
    for (const input of bad) {
      expect(conditionNodeSchema.safeParse(input).success).toBe(false);
      expect(validate(input)).toBe(false);
    }
  });
});
