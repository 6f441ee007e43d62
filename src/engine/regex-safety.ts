// Regex patterns in rules run against untrusted facts: refuse patterns that do not compile or can backtrack catastrophically.
import safeRegex from 'safe-regex2';

/** Why a pattern is refused, or undefined when it compiles and passes the star-height check of safe-regex2. */
export function regexProblem(pattern: string): string | undefined {
  try {
    new RegExp(pattern);
  } catch (error) {
    return `invalid regular expression: ${error instanceof Error ? error.message : String(error)}`;
  }
  if (!safeRegex(pattern)) {
    return 'regular expression may backtrack catastrophically (nested quantifiers such as (a+)+, more than 25 repetitions, or syntax the safety check cannot read); simplify it';
  }
  return undefined;
}
