// Every test worker: kafkajs's harmless negative-timeout warning stays out of the test output; other warnings still print.
import { printProcessWarnings } from '../src/logger.ts';

printProcessWarnings();
