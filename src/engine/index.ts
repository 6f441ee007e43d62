// The rules engine as a library: compile rules once, evaluate and explain facts. Pure: no I/O, no logger, no clock of its own.
export type { Accumulator, AggregateValues } from './accumulators.ts';
export type { AlphaNetwork } from './alpha-network.ts';
export { type CompileOptions, compileCondition } from './compile-condition.ts';
export { EngineMetrics, type EngineMetricsSnapshot, LATENCY_SAMPLES } from './engine-metrics.ts';
export { getPath } from './field-path.ts';
export { LiveEngine } from './live-engine.ts';
export { patternSize } from './regex-safety.ts';
export { renderAggregate, renderCondition } from './render-condition.ts';
export { type EngineOptions, type EvaluateOptions, type ExplainOptions, RuleEngine } from './rule-engine.ts';
export { formatPath, validateCondition } from './validate-condition.ts';
