// Starts the local stack once for the integration project, hands its endpoints to the tests, and stops it afterwards.
import type { TestProject } from 'vitest/node';
import { startLocalStack } from '../dev/local-stack/index.ts';
import { printProcessWarnings } from '../src/logger.ts';
import type { StackEndpoints } from './helpers/stack.ts';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  printProcessWarnings();
  const stack = await startLocalStack();
  const endpoints: StackEndpoints = {
    kafkaBrokers: stack.kafkaBrokers,
    schemaRegistryUrl: stack.schemaRegistryUrl,
    redisUrl: stack.redisUrl,
    databaseUrl: stack.databaseUrl,
    sources: stack.sources,
  };
  project.provide('stack', endpoints);
  return () => stack.stop();
}
