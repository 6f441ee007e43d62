// Before anything is timed, every contender must fire the same rules as the others for every fact it will see.
import type { FiredRules } from './fired-rules.ts';
import type { Fact } from './profile.ts';

export interface Checked {
  name: string;
  evaluate: (fact: Fact) => FiredRules | Promise<FiredRules>;
  /** Indexes into the fact pool this contender is checked on (all of them unless it is too slow). */
  factIndexes: readonly number[];
}

export class DisagreementError extends Error {
  override name = 'DisagreementError';
}

/** Compares each contender with the first one on its facts; throws naming the fact and both answers on the first mismatch. */
export async function checkAgreement(facts: readonly Fact[], baseline: Checked, others: readonly Checked[]): Promise<void> {
  const expected = new Map<number, FiredRules>();
  const needed = new Set(others.flatMap((other) => other.factIndexes));
  for (const index of baseline.factIndexes) if (needed.has(index)) expected.set(index, await baseline.evaluate(facts[index]!));
  for (const other of others) {
    for (const index of other.factIndexes) {
      const want = expected.get(index);
      if (want === undefined)
        throw new DisagreementError(`${other.name} is checked on fact #${index}, which ${baseline.name} was not run on`);
      const got = await other.evaluate(facts[index]!);
      if (!sameList(got.fired_rules, want.fired_rules) || !sameList(got.actions, want.actions)) {
        throw new DisagreementError(
          `${other.name} disagrees with ${baseline.name} on fact #${index} ${JSON.stringify(facts[index])}: ` +
            `${baseline.name} fired ${describe(want)}, ${other.name} fired ${describe(got)}`,
        );
      }
    }
  }
}

function sameList<T>(a: readonly T[], b: readonly T[]): boolean {
  return a.length === b.length && a.every((item, index) => item === b[index]);
}

function describe(result: FiredRules): string {
  const ids =
    result.fired_rules.length > 20
      ? `${result.fired_rules.slice(0, 20).join(', ')}, … (${result.fired_rules.length} in all)`
      : result.fired_rules.join(', ');
  return `[${ids}] with actions [${result.actions.join(', ')}]`;
}
