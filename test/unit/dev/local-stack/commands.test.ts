import { describe, expect, it } from 'vitest';
import { pomXml } from '../../../../dev/local-stack/maven.ts';
import { formatCommand, runCommand, runOrThrow, tail } from '../../../../dev/local-stack/run-command.ts';

describe('formatCommand', () => {
  it('quotes only the arguments a shell would split or expand', () => {
    expect(formatCommand('mvn', ['-B', '-Dartifact=io.apicurio:app:3.3.3:tar.gz:all', "it's here", 'a b'])).toBe(
      "mvn -B -Dartifact=io.apicurio:app:3.3.3:tar.gz:all 'it'\\''s here' 'a b'",
    );
  });
});

describe('tail', () => {
  it('keeps the last lines without the trailing newline', () => {
    expect(tail('one\ntwo\nthree\n', 2)).toBe('two\nthree');
    expect(tail('only', 5)).toBe('only');
  });
});

describe('runOrThrow', () => {
  it('returns the output of a command that succeeds', async () => {
    expect(await runOrThrow('Echo', 'sh', ['-c', 'echo out; echo err >&2'])).toBe('out\nerr\n');
  });

  it('names the step, the exit status, the exact command and its output when the command fails', async () => {
    await expect(runOrThrow('Maven download', 'sh', ['-c', 'echo "Could not resolve artifact"; exit 3'])).rejects.toThrow(
      'Maven download failed (exit 3): `sh -c \'echo "Could not resolve artifact"; exit 3\'`\nCould not resolve artifact',
    );
  });

  it('stops a command that runs past its time limit and says so, with what it printed', async () => {
    const started = Date.now();
    await expect(
      runOrThrow('Maven download', 'sh', ['-c', 'echo "Downloading from central"; sleep 30'], { timeoutMs: 300 }),
    ).rejects.toThrow(
      'Maven download did not finish within 300 ms and was stopped: `sh -c \'echo "Downloading from central"; sleep 30\'`\nDownloading from central',
    );
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('says which program is missing', async () => {
    await expect(runCommand('no-such-program-here', ['--version'])).rejects.toThrow(
      'could not run `no-such-program-here --version`: no-such-program-here is not on PATH',
    );
  });
});

describe('pomXml', () => {
  it('lists each dependency with its coordinates in a pom-packaged project', () => {
    const pom = pomXml([
      { groupId: 'org.apache.kafka', artifactId: 'kafka_2.13', version: '3.9.2' },
      { groupId: 'ch.qos.reload4j', artifactId: 'reload4j', version: '1.2.25' },
    ]);
    expect(pom).toContain('<packaging>pom</packaging>');
    expect(pom).toContain(
      '<dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>3.9.2</version></dependency>',
    );
    expect(pom).toContain(
      '<dependency><groupId>ch.qos.reload4j</groupId><artifactId>reload4j</artifactId><version>1.2.25</version></dependency>',
    );
  });
});
