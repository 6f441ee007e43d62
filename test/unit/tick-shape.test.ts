import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, open, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const TICK_SHAPE = new URL('../../src/tick-shape.ts', import.meta.url).href;

/**
 * A fresh process that holds a tick entry, queues a few more between full collections with none left queued at each, as
 * a start-up does, then many, and prints V8's feedback for nextTick (%DebugPrint): how its entry literal's stores went.
 * Without the held entry, V8 13.6 (Node 24) turns the stores megamorphic here.
 */
const SCRIPT = `
import { keepTickShape } from ${JSON.stringify(TICK_SHAPE)};
const held = keepTickShape();
const noop = () => {};
for (let round = 0; round < 4; round++) {
  for (let i = 0; i < 20; i++) process.nextTick(noop);
  await new Promise((resolve) => setImmediate(resolve));
  globalThis.gc();
}
for (let round = 0; round < 200; round++) {
  for (let i = 0; i < 1000; i++) process.nextTick(noop);
  await new Promise((resolve) => setImmediate(resolve));
}
process.stdout.write(\`held \${held}\\n\`);
new Function('f', '%DebugPrint(f)')(process.nextTick);
`;

/** Whether a tick entry was held, and the states of the entry literal's property stores in nextTick's feedback. */
async function nextTickFeedback(): Promise<{ held: boolean; stores: string[] }> {
  const args = ['--expose-gc', '--allow-natives-syntax', '--input-type=module', '-e', SCRIPT];
  // V8 prints through C's buffered stdout, which a pipe may cut short at exit; a file takes it whole.
  const directory = await mkdtemp(join(tmpdir(), 'tick-shape-'));
  const output = join(directory, 'stdout');
  const file = await open(output, 'w');
  try {
    const child = spawn(process.execPath, args, { stdio: ['ignore', file.fd, 'inherit'], timeout: 30_000 });
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);
    const stdout = await readFile(output, 'utf8');
    return {
      held: stdout.includes('held true'),
      stores: [...stdout.matchAll(/DefineKeyedOwnPropertyInLiteral (\w+)/g)].map((match) => match[1]!),
    };
  } finally {
    await file.close();
    await rm(directory, { recursive: true, force: true });
  }
}

describe('keepTickShape', () => {
  it("keeps the stores of nextTick's entry literal monomorphic across start-up collections", async () => {
    const kept = await nextTickFeedback();
    expect(kept.held).toBe(true);
    // A store for each key from the first computed one on: at least three.
    expect(kept.stores.length).toBeGreaterThanOrEqual(3);
    expect(kept.stores.every((state) => state === 'MONOMORPHIC')).toBe(true);
  });
});
