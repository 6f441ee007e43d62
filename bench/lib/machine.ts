// The header every benchmark prints: where and when the figures were taken.
import os from 'node:os';

export function machineHeader(extra: readonly string[] = []): string {
  const cpus = os.cpus();
  return [
    `- Machine: ${cpus[0]?.model.trim() ?? 'unknown CPU'}, ${cpus.length} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB RAM, ${os.type()} ${os.release()}`,
    `- Node: ${process.version} (V8 ${process.versions.v8})`,
    `- Date: ${new Date().toISOString()}`,
    ...extra.map((line) => `- ${line}`),
  ].join('\n');
}
