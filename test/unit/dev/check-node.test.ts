import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SCRIPT = fileURLToPath(new URL('../../../scripts/check-node.mjs', import.meta.url));

describe('the Node check before npm start, dev and test', () => {
  it('passes on a Node that runs TypeScript sources', () => {
    const run = spawnSync(process.execPath, [SCRIPT], { encoding: 'utf8' });
    expect([run.status, run.stderr]).toEqual([0, '']);
  });

  it('names the version needed on a Node that cannot, instead of failing on the first .ts file', () => {
    // The closest stand-in for an older Node here: this one with type stripping turned off.
    const run = spawnSync(process.execPath, ['--no-experimental-strip-types', SCRIPT], { encoding: 'utf8' });
    expect(run.status).toBe(1);
    expect(run.stderr).toBe(
      `This project runs its TypeScript sources directly, which needs Node.js 22.18 or newer (24 LTS recommended); this is Node.js ${process.version}.\n`,
    );
  });
});
