import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The import rules of docs/ARCHITECTURE.md: dependencies flow one way, from the foundation up to service.ts and main.ts.
const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../../src');

/** The layer of each part of src/; a module may import its own part or any part of a lower layer. */
const LAYERS: Record<string, number> = {
  contracts: 0,
  'errors.ts': 0,
  'config.ts': 0,
  'logger.ts': 0,
  'lifecycle.ts': 0,
  'within.ts': 0,
  'tick-shape.ts': 0,
  engine: 1,
  store: 2,
  sessions: 2,
  evaluation: 3,
  kafka: 4,
  http: 4,
  'service.ts': 5,
  'main.ts': 6,
};

/** Parts that may not import each other although their layers would allow it. */
const FORBIDDEN: [string, string][] = [
  ['kafka', 'http'],
  ['http', 'kafka'],
  ['store', 'sessions'],
  ['sessions', 'store'],
];

async function sourceFiles(directory: string): Promise<string[]> {
  const entries = await readdir(directory, { withFileTypes: true, recursive: true });
  return entries.filter((entry) => entry.isFile() && entry.name.endsWith('.ts')).map((entry) => join(entry.parentPath, entry.name));
}

function partOf(file: string): string {
  return relative(SRC, file).split('/')[0]!;
}

async function relativeImports(file: string): Promise<string[]> {
  const text = await readFile(file, 'utf8');
  return [...text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s+['"](\.[^'"]+)['"]/g)].map((match) =>
    resolve(dirname(file), match[1]!),
  );
}

describe('import rules (docs/ARCHITECTURE.md)', () => {
  it('gives every part of src/ a layer', async () => {
    for (const entry of await readdir(SRC)) expect(LAYERS, `src/${entry} needs a layer`).toHaveProperty(entry);
  });

  it('lets no module import a higher layer, or a sibling transport or store', async () => {
    const violations: string[] = [];
    for (const file of await sourceFiles(SRC)) {
      const from = partOf(file);
      for (const target of await relativeImports(file)) {
        if (!target.startsWith(SRC)) {
          // Only the composition root reads package.json (for the version); nothing else reaches outside src/.
          if (!(from === 'service.ts' && target.endsWith('/package.json')))
            violations.push(`${relative(SRC, file)} imports ${relative(SRC, target)}`);
          continue;
        }
        const to = partOf(target);
        if (to === from) continue;
        if (LAYERS[to]! > LAYERS[from]!)
          violations.push(`${relative(SRC, file)} (${from}) imports ${relative(SRC, target)} (${to}), a higher layer`);
        if (FORBIDDEN.some(([a, b]) => a === from && b === to)) violations.push(`${relative(SRC, file)} imports ${relative(SRC, target)}`);
      }
    }
    expect(violations).toEqual([]);
  });

  it('lets the entry point load nothing before it listens for stop signals', async () => {
    const entry = await readFile(join(SRC, 'main.ts'), 'utf8');
    expect(entry).not.toMatch(/^\s*import\b[^(]/m);
    expect(entry.indexOf('process.on(signal')).toBeGreaterThan(-1);
    expect(entry.indexOf('process.on(signal')).toBeLessThan(entry.indexOf("await import('./service.ts')"));
  });

  it('keeps contracts and the error registry free of other src/ modules', async () => {
    for (const file of [...(await sourceFiles(join(SRC, 'contracts'))), join(SRC, 'errors.ts')]) {
      for (const target of await relativeImports(file)) {
        const to = partOf(target);
        expect(
          to === 'contracts' || (to === 'errors.ts' && partOf(file) !== 'errors.ts'),
          `${relative(SRC, file)} imports ${relative(SRC, target)}`,
        ).toBe(true);
      }
    }
  });

  it('keeps the engine free of I/O: no store, sessions, transports, logger or config', async () => {
    for (const file of await sourceFiles(join(SRC, 'engine'))) {
      for (const target of await relativeImports(file))
        expect(['engine', 'contracts', 'errors.ts'], relative(SRC, file)).toContain(partOf(target));
    }
  });

  it('has no import cycle between files', async () => {
    const files = await sourceFiles(SRC);
    const graph = new Map<string, string[]>();
    for (const file of files)
      graph.set(
        file,
        (await relativeImports(file)).filter((target) => graph.has(target) || files.includes(target)),
      );
    const state = new Map<string, 'visiting' | 'done'>();
    const cycles: string[] = [];
    // Iterative depth-first search, so a long chain cannot overflow the stack.
    for (const start of files) {
      if (state.has(start)) continue;
      const stack: { file: string; next: number }[] = [{ file: start, next: 0 }];
      state.set(start, 'visiting');
      while (stack.length > 0) {
        const top = stack[stack.length - 1]!;
        const targets = graph.get(top.file) ?? [];
        if (top.next >= targets.length) {
          state.set(top.file, 'done');
          stack.pop();
          continue;
        }
        const target = targets[top.next++]!;
        if (state.get(target) === 'visiting') {
          const path = stack.slice(stack.findIndex((frame) => frame.file === target)).map((frame) => relative(SRC, frame.file));
          cycles.push([...path, relative(SRC, target)].join(' -> '));
        } else if (!state.has(target)) {
          state.set(target, 'visiting');
          stack.push({ file: target, next: 0 });
        }
      }
    }
    expect(cycles).toEqual([]);
  });
});
