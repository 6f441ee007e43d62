// Regex patterns in rules run against untrusted facts: refuse patterns that do not compile or cannot be bounded in time.
import { setFlagsFromString } from 'node:v8';
import safeRegex from 'safe-regex2';

// A match that backtracks 50,000 times is finished by V8's linear-time engine instead of running on for hours.
setFlagsFromString('--enable-experimental-regexp-engine-on-excessive-backtracks');
// The `l` flag asks that engine whether it can run a pattern: only those can be handed over.
setFlagsFromString('--enable-experimental-regexp-engine');

export interface RegexCheckOptions {
  /** A pattern of a rule already stored, checked when it was stored: only the checks of that time apply. */
  stored?: boolean;
}

/**
 * Why a pattern is refused, or undefined when it compiles, passes the star-height check of safe-regex2 and can run on
 * V8's linear-time engine, so that excessive backtracking on any input falls back to it.
 */
export function regexProblem(pattern: string, options: RegexCheckOptions = {}): string | undefined {
  try {
    new RegExp(pattern);
  } catch (error) {
    return `invalid regular expression: ${error instanceof Error ? error.message : String(error)}`;
  }
  if (!safeRegex(pattern)) {
    return 'regular expression may backtrack catastrophically (nested quantifiers such as (a+)+, more than 25 repetitions, or syntax the safety check cannot read); simplify it';
  }
  if (options.stored !== true && !runsInLinearTime(pattern)) {
    return 'regular expression cannot be bounded in time: back-references, lookahead and lookbehind are refused, and so are counts above 16 (write x{1,30} as x{1,16}x{0,14})';
  }
  return undefined;
}

function runsInLinearTime(pattern: string): boolean {
  try {
    new RegExp(pattern, 'l');
    return true;
  } catch {
    return false;
  }
}
