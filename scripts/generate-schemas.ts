// Writes schemas/*.schema.json from the zod contracts (`npm run schemas`); a unit test regenerates them and fails on drift.
import { writeFileSync } from 'node:fs';
import { z } from 'zod';
import { conditionNodeSchema } from '../src/contracts/condition-dsl.ts';
import {
  deadLetterHeadersSchema,
  factMessageSchema,
  resultMessageSchema,
  sessionResultMessageSchema,
} from '../src/contracts/kafka-messages.ts';

/** One published schema: add a row to publish another contract. */
export interface SchemaEntry {
  /** File name under schemas/. */
  readonly file: string;
  /** The contract module the schema is generated from, named in the stamp. */
  readonly source: string;
  readonly title: string;
  readonly description: string;
  readonly schema: z.ZodType;
}

export const SCHEMAS: readonly SchemaEntry[] = [
  {
    file: 'condition-dsl.schema.json',
    source: 'src/contracts/condition-dsl.ts',
    title: 'Condition DSL node',
    description:
      'A rule condition: a comparison, and/or/not, exists, an any/all quantifier over an array, or an accumulate aggregate ' +
      'over a session. Semantics: docs/dsl.md. The service also enforces what JSON Schema cannot say: depth <= 32, <= 1000 nodes, ' +
      'value shapes per operator, safe regexes, a field for sum/avg/min/max, no accumulate inside any/all or another accumulate.',
    schema: conditionNodeSchema,
  },
  {
    file: 'fact-message.schema.json',
    source: 'src/contracts/kafka-messages.ts',
    title: 'Fact message (Kafka input)',
    description:
      'The value of a message on the facts topic (KAFKA_FACTS_TOPIC): JSON text, or the same record in Avro / JSON Schema ' +
      'through the schema registry. The service also refuses facts nested deeper than 64 levels and prototype-poisoning keys. See docs/kafka.md.',
    schema: factMessageSchema,
  },
  {
    file: 'result-message.schema.json',
    source: 'src/contracts/kafka-messages.ts',
    title: 'Result message (Kafka output)',
    description:
      'The value of a message on the results topic (KAFKA_RESULTS_TOPIC) answering a fact evaluated statelessly (no session_id, ' +
      'streaming off), keyed like its input. See docs/kafka.md.',
    schema: resultMessageSchema,
  },
  {
    file: 'session-result-message.schema.json',
    source: 'src/contracts/kafka-messages.ts',
    title: 'Session result message (Kafka output)',
    description:
      'The value of a message on the results topic answering a fact with a session_id, or any fact in streaming mode ' +
      '(KAFKA_STREAMING=true, published only when activated or deactivated is non-empty); keyed like its input. See docs/kafka.md.',
    schema: sessionResultMessageSchema,
  },
  {
    file: 'dead-letter-headers.schema.json',
    source: 'src/contracts/kafka-messages.ts',
    title: 'Dead-letter headers (Kafka)',
    description:
      'The headers of a message on the dead-letter topic (KAFKA_DLQ_TOPIC), as UTF-8 text; its key, value and other headers ' +
      'are those of the original message, except that a dead letter larger than the dead-letter topic takes has a null value and ' +
      'only these headers (error_detail says so). See docs/kafka.md.',
    schema: deadLetterHeadersSchema,
  },
];

export const SCHEMAS_DIR = new URL('../schemas/', import.meta.url);

/** The file content for one entry: stamped, stable key order, two-space indent, trailing newline. */
export function renderSchema(entry: SchemaEntry): string {
  // The table's description wins over the contract's own one-line .describe().
  const { $schema, description: _contractDescription, ...body } = z.toJSONSchema(entry.schema, { target: 'draft-2020-12' });
  const document = {
    $schema,
    $comment: `Generated from ${entry.source} by scripts/generate-schemas.ts (npm run schemas). Do not edit by hand.`,
    title: entry.title,
    description: entry.description,
    ...body,
  };
  return `${JSON.stringify(document, null, 2)}\n`;
}

if (import.meta.main) {
  for (const entry of SCHEMAS) {
    writeFileSync(new URL(entry.file, SCHEMAS_DIR), renderSchema(entry));
    process.stdout.write(`wrote schemas/${entry.file}\n`);
  }
}
