// Regex patterns in rules run against untrusted facts: refuse patterns that do not compile or cannot be bounded in time.
import { setFlagsFromString } from 'node:v8';
import safeRegex from 'safe-regex2';

// A match that backtracks too often is finished by V8's linear-time engine instead of running on for hours.
setFlagsFromString('--enable-experimental-regexp-engine-on-excessive-backtracks');
// 1,000 instead of V8's 50,000: `a*a*x` over 1,000 a's took 36 ms before falling back, 1 ms after.
setFlagsFromString('--regexp-backtracks-before-fallback=1000');
// The `l` flag asks that engine whether it can run a pattern: only those can be handed over.
setFlagsFromString('--enable-experimental-regexp-engine');

/**
 * Largest pattern a new rule may hold, by patternSize: both engines' work grows with it as with the text's, about 10 to
 * 30 ns per unit and character of text (a 434-unit pattern took 115 ms over 10,000 characters).
 */
export const MAX_PATTERN_SIZE = 256;

/**
 * Texts longer than this are searched by the linear-time engine when the pattern repeats something without bound: V8's
 * usual engine then walks the rest of the text again from every start (`a*x` over 10,000 a's: 85 ms, 1 ms linear),
 * and such steps do not count as backtracks. Shorter texts, and every pattern without `*`, `+` or `{n,}`, keep the
 * usual engine, a hundred times faster on ordinary text.
 */
export const LINEAR_SEARCH_FROM = 1_000;

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
    return 'regular expression may backtrack catastrophically (nested quantifiers such as (a+)+, more than 25 repetitions, or syntax the safety check cannot read): simplify it';
  }
  if (options.stored !== true && !runsInLinearTime(pattern)) {
    return 'regular expression cannot be bounded in time: back-references, lookahead and lookbehind are refused, and so are counts above 16 (write x{1,30} as x{1,16}x{0,14})';
  }
  if (options.stored !== true && patternSize(pattern) > MAX_PATTERN_SIZE) {
    return `regular expression must be at most ${MAX_PATTERN_SIZE} characters, a part repeated n times (x{n}) counting n times (a list of alternatives is better written with in)`;
  }
  return undefined;
}

/** A search of a validated pattern: the usual engine, or the linear-time one for long texts when it bounds the time. */
export function compileRegex(pattern: string): (text: string) => boolean {
  const usual = new RegExp(pattern);
  const linear = repeatsWithoutBound(pattern) ? linearEngine(pattern) : undefined;
  if (linear === undefined) return (text) => usual.test(text);
  return (text) => (text.length > LINEAR_SEARCH_FROM ? linear : usual).test(text);
}

function runsInLinearTime(pattern: string): boolean {
  return linearEngine(pattern) !== undefined;
}

/** The pattern on the linear-time engine; undefined for one it cannot run (a rule stored before that check). */
function linearEngine(pattern: string): RegExp | undefined {
  try {
    return new RegExp(pattern, 'l');
  } catch {
    return undefined;
  }
}

const COUNT = /\{(\d+)(,?)(\d*)\}/y;

/**
 * A pattern's size with its counted repeats written out (`x{16}` is 17, `(?:ab|c){3}` 13): what the engines' work grows
 * with. Each character and escape counts one, a character class as many as the characters inside its brackets, each
 * group and quantifier one more.
 */
export function patternSize(pattern: string): number {
  return readPattern(pattern).size;
}

/** Whether the pattern has a `*`, `+` or `{n,}` quantifier (escapes and character classes read as such). */
export function repeatsWithoutBound(pattern: string): boolean {
  return readPattern(pattern).repeatsWithoutBound;
}

/** One reading of a pattern's syntax for both: its size, and whether it repeats anything without bound. */
function readPattern(pattern: string): { size: number; repeatsWithoutBound: boolean } {
  const chars = [...pattern];
  let unbounded = false;
  // Per open group: its finished alternatives, the sequence being read, and the sequence's last atom (what a count repeats).
  const frames = [{ done: 0, sequence: 0, last: 0 }];
  const top = () => frames[frames.length - 1] as { done: number; sequence: number; last: number };
  const atom = (size: number) => {
    top().sequence += size;
    top().last = size;
  };
  for (let i = 0; i < chars.length; i += 1) {
    const char = chars[i];
    const count = char === '{' ? countAt(chars, i) : undefined;
    if (char === '\\') {
      i += 1;
      atom(1);
    } else if (char === '[') {
      // Up to the unescaped `]` (in JavaScript a `]` right after `[` closes an empty class); a class costs a search as
      // much as the characters and ranges it lists.
      const start = i;
      for (i += 1; i < chars.length && chars[i] !== ']'; i += 1) if (chars[i] === '\\') i += 1;
      atom(Math.max(1, i - start - 1));
    } else if (char === '(') {
      if (chars[i + 1] === '?') {
        // The group's own syntax: (?:, (?=, (?!, (?<=, (?<! or (?<name>.
        i += 2;
        if (chars[i] === '<' && chars[i + 1] !== '=' && chars[i + 1] !== '!') while (i < chars.length && chars[i] !== '>') i += 1;
        else if (chars[i] === '<') i += 1;
      }
      frames.push({ done: 0, sequence: 0, last: 0 });
    } else if (char === ')' && frames.length > 1) {
      const group = frames.pop() as { done: number; sequence: number };
      atom(group.done + group.sequence + 1);
    } else if (char === '|') {
      top().done += top().sequence;
      top().sequence = 0;
      top().last = 0;
    } else if (char === '*' || char === '+' || char === '?') {
      unbounded ||= char !== '?';
      top().sequence += 1;
    } else if (count !== undefined) {
      unbounded ||= count.open;
      top().sequence += top().last * (Math.max(count.times, 1) - 1) + 1;
      i += count.length - 1;
    } else {
      atom(1);
    }
  }
  return { size: top().done + top().sequence, repeatsWithoutBound: unbounded };
}

/**
 * The count quantifier at `i` (`{n}`, `{n,}`, `{n,m}`): how many times it repeats at most (n + 1 for `{n,}`), and
 * whether it is open-ended.
 */
function countAt(chars: readonly string[], i: number): { times: number; open: boolean; length: number } | undefined {
  COUNT.lastIndex = 0;
  const match = COUNT.exec(chars.slice(i, i + 24).join(''));
  if (match === null) return undefined;
  const [whole, low, comma, high] = match as unknown as [string, string, string, string];
  const open = comma !== '' && high === '';
  const times = high !== '' ? Number(high) : open ? Number(low) + 1 : Number(low);
  return { times, open, length: [...whole].length };
}
