// Regex search cost: the engine's searches (compileRegex: V8's usual engine with a low backtrack limit, the linear-time
// engine for long texts when the pattern repeats without bound) beside plain RegExp.prototype.test with V8's defaults
// (the floor, and what rules ran on before), on ordinary text and on text chosen to make the usual engine slow.
// Each side runs in a child process of its own, since the engine's V8 flags are process-wide.
// Usage: npm run bench:regex
import { execFileSync } from 'node:child_process';
import { setFlagsFromString } from 'node:v8';
import { machineHeader } from './lib/machine.ts';

type Side = 'engine' | 'plain';
interface Case {
  readonly pattern: string;
  readonly text: 'prose' | 'run of a';
}

const alternatives = Array.from({ length: 100 }, (_, i) => `x${String(i).padStart(4, '0')}`).join('|');
const CASES: readonly Case[] = [
  { pattern: 'fraud|scam', text: 'prose' },
  { pattern: '\\bcasino\\b', text: 'prose' },
  { pattern: '\\d{4}-\\d{2}-\\d{2}', text: 'prose' },
  { pattern: '[a-z]+@[a-z]+\\.com', text: 'prose' },
  { pattern: '\\w+@example\\.com', text: 'run of a' },
  { pattern: 'a*x', text: 'run of a' },
  { pattern: 'a*a*x', text: 'run of a' },
  { pattern: `a*a*(${alternatives})`, text: 'run of a' },
];
const LENGTHS = [100, 1_000, 10_000];
const WORDS = 'lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore'.split(' ');

function text(kind: Case['text'], length: number): string {
  if (kind === 'run of a') return 'a'.repeat(length);
  let prose = '';
  for (let i = 0; prose.length < length; i += 1) prose += `${WORDS[i % WORDS.length]} `;
  return prose.slice(0, length);
}

/** µs per search: repeated until 200 ms have passed (at least 3 searches), after one warm-up search. */
function time(search: (text: string) => boolean, input: string): number {
  search(input);
  let runs = 0;
  const started = performance.now();
  while (runs < 3 || performance.now() - started < 200) {
    search(input);
    runs += 1;
  }
  return ((performance.now() - started) * 1_000) / runs;
}

async function measure(side: Side): Promise<number[][]> {
  let compile: (pattern: string) => (text: string) => boolean;
  if (side === 'engine') {
    compile = (await import('../src/engine/regex-safety.ts')).compileRegex;
  } else {
    // As rules ran before: the fallback on, at V8's own limit of 50,000 backtracks.
    setFlagsFromString('--enable-experimental-regexp-engine-on-excessive-backtracks');
    compile = (pattern) => {
      const regex = new RegExp(pattern);
      return (input) => regex.test(input);
    };
  }
  return CASES.map((c) => {
    const search = compile(c.pattern);
    return LENGTHS.map((length) => time(search, text(c.text, length)));
  });
}

const side = process.argv[2];
if (side === 'engine' || side === 'plain') {
  process.stdout.write(JSON.stringify(await measure(side)));
} else {
  const run = (which: Side): number[][] =>
    JSON.parse(execFileSync(process.execPath, [new URL(import.meta.url).pathname, which], { encoding: 'utf8' }));
  const plain = run('plain');
  const engine = run('engine');
  const format = (us: number): string => (us >= 1_000 ? `${(us / 1_000).toFixed(1)} ms` : `${us.toFixed(2)} µs`);
  console.log('\n## Regex search: the engine beside plain RegExp.prototype.test\n');
  console.log(machineHeader(['Time per search (test of one text); plain: V8 defaults, fallback after 50,000 backtracks']));
  console.log(`\n| Pattern | Text | ${LENGTHS.map((n) => `${n.toLocaleString('en-US')} chars: plain / engine`).join(' | ')} |`);
  console.log(`|---|---|${LENGTHS.map(() => '---').join('|')}|`);
  CASES.forEach((c, i) => {
    const shown = c.pattern.length > 24 ? `${c.pattern.slice(0, 21)}… (${c.pattern.length} chars)` : c.pattern;
    const cells = LENGTHS.map((_, j) => `${format(plain[i]![j]!)} / ${format(engine[i]![j]!)}`);
    console.log(`| \`${shown.replaceAll('|', '\\|')}\` | ${c.text} | ${cells.join(' | ')} |`);
  });
}
