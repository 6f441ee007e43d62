import { describe, expect, it } from 'vitest';
import { UsageError } from '../../../bench/lib/cli-options.ts';
import { mulberry32 } from '../../../bench/lib/prng.ts';
import { runLoad, summariseLoad } from '../../../bench/lib/session-load.ts';
import { parseSessionBenchOptions, SESSION_DEFAULTS } from '../../../bench/lib/session-options.ts';
import {
  medianTimesFloor,
  renderSessionTable,
  type SessionRow,
  sessionTargetLines,
  timesFloor,
} from '../../../bench/lib/session-report.ts';
import { eventTime, FactIds, SESSION_DOMAIN, sessionEvent, sessionRules } from '../../../bench/lib/session-workload.ts';
import { ruleSchema } from '../../../src/contracts/rule.ts';
import { RuleEngine } from '../../../src/engine/index.ts';
import { eventTimeOf } from '../../../src/evaluation/event-time.ts';
import { toRuleInput } from '../../../src/evaluation/rule-catalog.ts';

describe('sessionRules', () => {
  const rules = sessionRules(100, 20, mulberry32(1));

  it('makes 100 valid enabled rules of one domain that compile, 20 of them with one accumulate node', () => {
    expect(rules).toHaveLength(100);
    expect(rules.map((rule) => rule.id)).toEqual(Array.from({ length: 100 }, (_, index) => index + 1));
    for (const rule of rules) {
      expect(ruleSchema.safeParse(toRuleInput(rule)).success).toBe(true);
      expect(rule.domain).toBe(SESSION_DOMAIN);
      expect(rule.enabled).toBe(true);
    }
    const engine = RuleEngine.compile(rules);
    expect(engine.size).toBe(100);
    const accumulators = engine.accumulators(SESSION_DOMAIN);
    expect(accumulators).toHaveLength(20);
    expect(new Set(accumulators.map((a) => a.ruleId))).toEqual(new Set(Array.from({ length: 20 }, (_, index) => index + 1)));
  });

  it('uses every aggregate function, and every count has a where and a window', () => {
    const accumulators = RuleEngine.compile(rules).accumulators(SESSION_DOMAIN);
    const byFunction = Map.groupBy(accumulators, (a) => a.fn);
    expect([...byFunction.keys()].sort()).toEqual(['avg', 'count', 'max', 'min', 'sum']);
    for (const group of byFunction.values()) expect(group).toHaveLength(4);
    for (const count of byFunction.get('count') ?? []) {
      expect(count.node.where).toBeDefined();
      expect(count.windowMs).toBeGreaterThan(0);
    }
  });

  it('is the same for the same seed', () => {
    expect(sessionRules(100, 20, mulberry32(1))).toEqual(rules);
    expect(sessionRules(100, 20, mulberry32(2))).not.toEqual(rules);
  });

  it('refuses impossible shapes', () => {
    expect(() => sessionRules(0, 0, mulberry32(1))).toThrow(/total must be a positive integer/);
    expect(() => sessionRules(10, 11, mulberry32(1))).toThrow(/accumulates must be an integer from 0 to 10/);
    expect(() => sessionRules(10, -1, mulberry32(1))).toThrow(/accumulates must be an integer/);
  });
});

describe('session events', () => {
  it('carry an ISO 8601 timestamp the evaluator reads back as the same event time', () => {
    const random = mulberry32(3);
    const at = Date.parse('2026-03-02T08:00:00Z');
    const event = sessionEvent(random, 'customer-1', at);
    expect(event.customer.id).toBe('customer-1');
    expect(event.amount).toBeGreaterThanOrEqual(1);
    expect(event.amount).toBeLessThanOrEqual(5_000);
    expect(eventTimeOf(event, 'timestamp')).toBe(at);
  });

  it('are stamped at most 10 minutes before the clock, mostly within 2 s', () => {
    const random = mulberry32(4);
    const now = 1_000_000_000;
    const delays = Array.from({ length: 10_000 }, () => now - eventTime(random, now));
    expect(Math.min(...delays)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...delays)).toBeLessThanOrEqual(600_000);
    const late = delays.filter((delay) => delay > 2_000).length;
    expect(late).toBeGreaterThan(100);
    expect(late).toBeLessThan(400);
  });
});

describe('FactIds', () => {
  it('continues after the preloaded ids and replaces only ids already handed out, about as often as asked', () => {
    const ids = new FactIds(mulberry32(5), 10_000, 0.25);
    let replacements = 0;
    for (let i = 0; i < 4_000; i++) {
      const { factId, replacement } = ids.next();
      const n = Number(factId.slice(2));
      if (replacement) {
        replacements += 1;
        expect(n).toBeLessThan(ids.issued);
        expect(n).toBeGreaterThanOrEqual(ids.issued - 1_000);
      } else {
        expect(n).toBe(ids.issued - 1);
      }
    }
    expect(replacements).toBeGreaterThan(850);
    expect(replacements).toBeLessThan(1_150);
    expect(ids.issued).toBe(10_000 + 4_000 - replacements);
  });

  it('starts at f-0 on an empty session and never replaces with a share of 0', () => {
    const ids = new FactIds(mulberry32(6), 0, 0);
    expect([ids.next(), ids.next()]).toEqual([
      { factId: 'f-0', replacement: false },
      { factId: 'f-1', replacement: false },
    ]);
  });

  it('refuses a share outside [0, 1]', () => {
    expect(() => new FactIds(mulberry32(1), 0, 1.5)).toThrow(/replaceShare must be within/);
    expect(() => new FactIds(mulberry32(1), 0, Number.NaN)).toThrow(/replaceShare must be within/);
  });
});

describe('runLoad', () => {
  it('runs every index once and never has more than inFlight calls outstanding', async () => {
    let outstanding = 0;
    let peak = 0;
    const seen: number[] = [];
    const result = await runLoad(50, 4, async (index) => {
      outstanding += 1;
      peak = Math.max(peak, outstanding);
      seen.push(index);
      await new Promise((resolve) => setTimeout(resolve, 1));
      outstanding -= 1;
    });
    expect(peak).toBe(4);
    expect(seen.sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, index) => index));
    expect(result.operations).toBe(50);
    expect(result.opsPerSecond).toBeGreaterThan(0);
    expect(result.p50Us).toBeGreaterThanOrEqual(500);
    expect(result.p99Us).toBeGreaterThanOrEqual(result.p50Us);
    expect(result.cpuUsPerOp).toBeGreaterThan(0);
  });

  it('is strictly sequential with one in flight', async () => {
    let outstanding = 0;
    await runLoad(10, 1, async () => {
      outstanding += 1;
      expect(outstanding).toBe(1);
      await Promise.resolve();
      outstanding -= 1;
    });
  });

  it('refuses a count or concurrency that is not a positive integer', async () => {
    await expect(runLoad(0, 1, async () => undefined)).rejects.toThrow(/total must be a positive integer/);
    await expect(runLoad(10, 0, async () => undefined)).rejects.toThrow(/inFlight must be a positive integer/);
  });

  it('summarises unordered samples by nearest rank', () => {
    const samples = Float64Array.from({ length: 100 }, (_, index) => 100 - index);
    expect(summariseLoad(samples, 2, 5_000)).toEqual({ operations: 100, opsPerSecond: 50, p50Us: 50, p99Us: 99, cpuUsPerOp: 50 });
    expect(summariseLoad(samples, 0, 0).opsPerSecond).toBeNaN();
    expect(summariseLoad(new Float64Array(0), 1, 10).cpuUsPerOp).toBeNaN();
  });
});

describe('session report', () => {
  const floor = { operations: 4, opsPerSecond: 90_000, p50Us: 10, p99Us: 30, cpuUsPerOp: 4 };
  const adds = { operations: 4, opsPerSecond: 2_000, p50Us: 400, p99Us: 2_500, cpuUsPerOp: 61.5 };
  const rows: SessionRow[] = [
    { label: 'floor', load: '1 in flight', result: floor, floor: undefined, redisUsPerOp: 2.25 },
    { label: 'add-fact, Redis', load: '1 in flight', result: adds, floor, redisUsPerOp: 210 },
    { label: 'add-fact, in-process', load: '1 in flight', result: adds, floor, redisUsPerOp: undefined },
  ];

  it('shows each row against its floor', () => {
    expect(timesFloor(rows[0]!)).toBe(1);
    expect(timesFloor(rows[1]!)).toBe(45);
    expect(renderSessionTable(rows).split('\n')).toEqual([
      '| operation | load | ops/s | p50 µs | p99 µs | × floor time | client CPU µs/op | Redis µs/op |',
      '|---|---|---:|---:|---:|---:|---:|---:|',
      '| floor | 1 in flight | 90,000 | 10.0 | 30.0 | 1.0× | 4.00 | 2.25 |',
      '| add-fact, Redis | 1 in flight | 2,000 | 400 | 2,500 | 45× | 61.5 | 210 |',
      '| add-fact, in-process | 1 in flight | 2,000 | 400 | 2,500 | 45× | 61.5 | – |',
    ]);
  });

  it('fails the targets when p99 reaches 2 ms or throughput falls more than 3× below the floor', () => {
    expect(sessionTargetLines({ sequential: adds, rounds: [{ floor, oneSession: adds, spread: adds }], sessions: 4 })).toEqual([
      'FAIL add-fact p99 over Redis, one in flight: 2,500 µs (target < 2,000 µs)',
      "FAIL add-fact throughput over Redis, one session (the issue's workload): 45× below the floor (median of 1 rounds: 45×; target within 3×)",
      'FAIL add-fact throughput over Redis, spread over 4 sessions (beyond the issue): 45× below the floor (median of 1 rounds: 45×; target within 3×)',
    ]);
  });

  it('passes them when p99 is under 2 ms and throughput within 3×, judging each round against its own floor', () => {
    const at = (opsPerSecond: number) => ({ ...floor, opsPerSecond });
    const fast = { operations: 4, opsPerSecond: 30_000, p50Us: 100, p99Us: 1_999, cpuUsPerOp: 20 };
    // Round 2 ran in a slow stretch: its floor and adds both slowed, so its ratio is as good as the others'.
    const rounds = [
      { floor: at(90_000), oneSession: at(30_000), spread: at(20_000) },
      { floor: at(30_000), oneSession: at(12_000), spread: at(6_000) },
      { floor: at(60_000), oneSession: at(10_000), spread: at(15_000) },
    ];
    expect(medianTimesFloor(rounds, (round) => round.oneSession)).toBe(3);
    expect(medianTimesFloor(rounds.slice(0, 2), (round) => round.oneSession)).toBe(2.75);
    const lines = sessionTargetLines({ sequential: fast, rounds, sessions: 4 });
    expect(lines.map((line) => line.slice(0, 4))).toEqual(['PASS', 'PASS', 'FAIL']);
    expect(lines[1]).toContain('3.0× below the floor (median of 3 rounds: 3.0×, 2.5×, 6.0×');
    expect(lines[2]).toContain('4.5× below');
  });
});

describe('parseSessionBenchOptions', () => {
  it('defaults to the issue: 10,000 facts per session', () => {
    expect(parseSessionBenchOptions([])).toEqual(SESSION_DEFAULTS);
    expect(SESSION_DEFAULTS.facts).toBe(10_000);
  });

  it('reads every flag', () => {
    expect(
      parseSessionBenchOptions([
        '--facts',
        '100',
        '--adds',
        '50',
        '--in-flight',
        '8',
        '--sessions',
        '2',
        '--replace-share',
        '0.5',
        '--rounds',
        '5',
        '--seed',
        '9',
      ]),
    ).toEqual({ facts: 100, adds: 50, inFlight: 8, sessions: 2, replaceShare: 0.5, rounds: 5, seed: 9 });
  });

  it('refuses unknown flags, non-numbers and out-of-range values with the usage', () => {
    expect(() => parseSessionBenchOptions(['--quick'])).toThrow(UsageError);
    expect(() => parseSessionBenchOptions(['--adds', '1e3'])).toThrow(/--adds: "1e3" is not a whole number/);
    expect(() => parseSessionBenchOptions(['--adds', '0'])).toThrow(/--adds: 0 is outside 1\.\.10000000/);
    expect(() => parseSessionBenchOptions(['--in-flight', '5000'])).toThrow(/--in-flight: 5000 is outside/);
    expect(() => parseSessionBenchOptions(['--replace-share', '2'])).toThrow(/--replace-share: "2" is not a number from 0 to 1/);
    expect(() => parseSessionBenchOptions(['--replace-share', ''])).toThrow(/--replace-share/);
    expect(() => parseSessionBenchOptions(['--seed', '-1'])).toThrow(UsageError);
    expect(() => parseSessionBenchOptions(['--rounds', '0'])).toThrow(/--rounds: 0 is outside 1\.\.20/);
  });
});
