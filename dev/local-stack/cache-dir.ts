// Where downloads are kept between runs: $XDG_CACHE_HOME or ~/.cache, under one folder named for the project.
import { homedir } from 'node:os';
import { join } from 'node:path';

export const CACHE_SUBDIR = 'rules-evaluation-service';

/** The cache root for this user; never a fixed absolute path, so every machine and user gets its own. */
export function cacheDir(env: Readonly<Record<string, string | undefined>>): string {
  const xdg = env.XDG_CACHE_HOME?.trim();
  return join(xdg !== undefined && xdg !== '' ? xdg : join(homedir(), '.cache'), CACHE_SUBDIR);
}
