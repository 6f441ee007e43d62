import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, type ErrorCode } from '../../../src/errors.ts';

interface Row {
  code: string;
  status: number;
  retryable: string;
  meaning: string;
  when: string;
}

async function documentedRows(): Promise<Row[]> {
  const text = await readFile(new URL('../../../docs/errors.md', import.meta.url), 'utf8');
  return text
    .split('\n')
    .filter((line) => /^\|\s*`[A-Z_]+`\s*\|/.test(line))
    .map((line) => {
      const [code, status, retryable, meaning, when] = line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim());
      return { code: code!.replaceAll('`', ''), status: Number(status), retryable: retryable!, meaning: meaning!, when: when! };
    });
}

describe('docs/errors.md and the error registry', () => {
  it('documents every registered code', async () => {
    const documented = new Set((await documentedRows()).map((row) => row.code));
    for (const code of Object.keys(ERROR_CODES)) expect(documented, `missing row for ${code}`).toContain(code);
  });

  it('has no row for a code the registry does not hold, and no code twice', async () => {
    const rows = await documentedRows();
    for (const row of rows) expect(Object.keys(ERROR_CODES), `unknown code ${row.code}`).toContain(row.code);
    expect(new Set(rows.map((row) => row.code)).size).toBe(rows.length);
  });

  it('states the status and retryability the registry gives each code', async () => {
    for (const row of await documentedRows()) {
      const spec = ERROR_CODES[row.code as ErrorCode];
      expect(row.status, row.code).toBe(spec.status);
      expect(row.retryable, row.code).toBe(spec.retryable ? 'yes' : 'no');
      expect(row.meaning, row.code).not.toBe('');
      expect(row.when, row.code).not.toBe('');
    }
  });
});
