/**
 * The compiled build (`npm run build`), so production runs plain JavaScript instead of compiling
 * through tsx at every start (an agent's cold start 1.0–1.2 s → ~0.7 s, 45 MB less memory;
 * measured by bench/startup.ts):
 * - the account service and the operator CLIs: every TypeScript file of `contracts/`, `server/`,
 *   `rest-bridge/` and `scripts/` transpiled one to one into `dist/` (same tree, `.js`).
 *   `dist/prisma` and `dist/client` link back to the sources, so the paths the code resolves from
 *   `import.meta.url` hold in both trees;
 * - the agent: one bundle with its code cache in `dist/agent/`, started by `dist/agent/boot.cjs`
 *   (server/agent/boot.ts, scripts/agent-bundle.ts), since an agent starts at every wake.
 *
 * Whether the build is current is a cheap question (about 250 `stat` calls): the newest source
 * file and package-lock.json (the bundle holds the packages' code) against the stamp the last
 * build wrote, made by this same Node (V8 refuses a code cache made by another).
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root, from this file's place in either tree (server/common or dist/server/common). */
export const REPO_ROOT = (() => {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const up = path.resolve(here, '../..');
  return path.basename(up) === 'dist' ? path.dirname(up) : up;
})();

export const DIST_DIR = path.join(REPO_ROOT, 'dist');
export const BUILD_STAMP = path.join(DIST_DIR, '.build-stamp');
/** The trees the server build compiles. */
export const SERVER_SOURCES = ['contracts', 'server', 'rest-bridge', 'scripts'];
/** The agent's own sources: in its bundle, not in the per-file tree. */
export const AGENT_SOURCES = path.join(REPO_ROOT, 'server/agent/');
/** What runs an agent (`node <AGENT_BOOT>`), the bundle it compiles, and that bundle's V8 code cache. */
export const AGENT_BOOT = path.join(DIST_DIR, 'agent/boot.cjs');
export const AGENT_BUNDLE = path.join(DIST_DIR, 'agent/agent.cjs');
export const AGENT_CODE_CACHE = path.join(DIST_DIR, 'agent/agent.code-cache');

/** True when this module itself runs from the compiled tree. */
export const RUNNING_COMPILED = import.meta.url.endsWith('.js');

/** The newest modification time (ms) of any file under `dirs` whose name passes `accept`. */
export function newestSource(dirs: string[], accept: (name: string) => boolean = (name) => name.endsWith('.ts')): number {
  let newest = 0;
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (accept(entry.name)) newest = Math.max(newest, statSync(full).mtimeMs);
    }
  };
  for (const dir of dirs) if (existsSync(dir)) walk(dir);
  return newest;
}

/** What the build stamp says: when, and by which Node. */
export const buildStamp = (): string => `${new Date().toISOString()} ${process.version}\n`;

/** Whether `dist/` holds a build of the current server sources and packages, made by this Node. */
export function serverBuildIsCurrent(root = REPO_ROOT): boolean {
  const stamp = path.join(root, 'dist', '.build-stamp');
  if (!existsSync(stamp) || readFileSync(stamp, 'utf8').trim().split(' ')[1] !== process.version) return false;
  const lock = path.join(root, 'package-lock.json');
  const newest = Math.max(newestSource(SERVER_SOURCES.map((dir) => path.join(root, dir))), existsSync(lock) ? statSync(lock).mtimeMs : 0);
  return statSync(stamp).mtimeMs >= newest;
}
