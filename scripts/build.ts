/**
 * `npm run build`: the services into dist/ (server/common/build.ts says why and how: the account
 * service file by file, the agent as one bundle, scripts/agent-bundle.ts) and the web client
 * into client/web/dist/. `--if-stale` builds only what is older than its sources (what
 * `npm start`, `start:account` and `start:agent` run first); `--server` leaves the web client out.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import { AGENT_SOURCES, BUILD_STAMP, DIST_DIR, REPO_ROOT, SERVER_SOURCES, buildStamp, newestSource, serverBuildIsCurrent } from '../server/common/build.js';
import { buildAgentBundle } from './agent-bundle.js';

const WEB_DIR = path.join(REPO_ROOT, 'client/web');
const WEB_STAMP = path.join(WEB_DIR, 'dist/index.html');

export async function buildServer(): Promise<void> {
  rmSync(DIST_DIR, { recursive: true, force: true });
  // The agent runs from its bundle only; the account service (and what it shares) file by file.
  const entryPoints = SERVER_SOURCES.flatMap((dir) => listTs(path.join(REPO_ROOT, dir))).filter((file) => !file.startsWith(AGENT_SOURCES));
  const { outputFiles } = await build({
    entryPoints,
    outdir: DIST_DIR,
    outbase: REPO_ROOT,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: true,
    logLevel: 'warning',
    write: false,
  });
  for (const file of outputFiles) {
    mkdirSync(path.dirname(file.path), { recursive: true });
    writeFileSync(file.path, file.path.endsWith('.js') ? resolveContractsAlias(file.path, file.text) : file.contents);
  }
  // Paths the code resolves next to itself (migrations, the built web client) lead back to the sources.
  for (const link of ['prisma', 'client']) symlinkSync(path.join('..', link), path.join(DIST_DIR, link));
  await buildAgentBundle();
  writeFileSync(BUILD_STAMP, buildStamp());
}

/**
 * esbuild transpiles file by file and leaves import specifiers as written, and Node knows nothing
 * of tsconfig `paths`: `@contracts/x.js` becomes the relative path to dist/contracts/x.js.
 */
function resolveContractsAlias(file: string, code: string): string {
  return code.replace(/(["'])@contracts\/([^"']+)\1/g, (_match, quote: string, rest: string) => {
    const relative = path.relative(path.dirname(file), path.join(DIST_DIR, 'contracts', rest));
    return `${quote}${relative.startsWith('.') ? relative : `./${relative}`}${quote}`;
  });
}

function listTs(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts'))
    .map((entry) => path.join(entry.parentPath, entry.name));
}

function webBuildIsCurrent(): boolean {
  if (!existsSync(WEB_STAMP)) return false;
  const sources = newestSource([path.join(WEB_DIR, 'src'), path.join(REPO_ROOT, 'client/sdk')], () => true);
  const config = Math.max(statSync(path.join(WEB_DIR, 'index.html')).mtimeMs, statSync(path.join(WEB_DIR, 'vite.config.ts')).mtimeMs);
  return statSync(WEB_STAMP).mtimeMs >= Math.max(sources, config);
}

export function buildWeb(): void {
  execFileSync(
    process.execPath,
    [path.join(REPO_ROOT, 'node_modules/vite/bin/vite.js'), 'build', '--config', path.join(WEB_DIR, 'vite.config.ts'), '--logLevel', 'warn'],
    {
      cwd: REPO_ROOT,
      stdio: 'inherit',
    },
  );
}

/** What `npm start` and the start scripts call: builds what is missing or older than its sources. */
export async function buildIfStale(opts: { web: boolean }): Promise<void> {
  if (!serverBuildIsCurrent()) await buildServer();
  if (opts.web && !webBuildIsCurrent()) buildWeb();
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.join(REPO_ROOT, 'scripts/build.ts')) {
  const { values } = parseArgs({ options: { 'if-stale': { type: 'boolean' }, server: { type: 'boolean' } } });
  mkdirSync(DIST_DIR, { recursive: true });
  if (values['if-stale']) await buildIfStale({ web: !values.server });
  else {
    await buildServer();
    if (!values.server) buildWeb();
  }
}
