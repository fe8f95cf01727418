/**
 * The agent as production runs it (part of `npm run build`; server/agent/boot.ts says why):
 * - dist/agent/agent.cjs: server/agent/run.ts and everything it loads as one function
 *   expression `(function (exports, require, module, __filename, __dirname) {…})`,
 *   whitespace-minified, ASCII only, its first line `// <sha256 of the rest>`. Every `import()`
 *   becomes a lazy require of code in the same file, so what an agent needs only later (the model
 *   SDKs, the migration engine, the OpenAPI generator) is compiled and run only then. Left in
 *   node_modules, loaded from there when first used: better-sqlite3 (a native addon), packages
 *   only some agents use (grammY for Telegram bots, OpenTelemetry for tracing) and Prisma's query
 *   compiler (2 MB of Wasm as base64, wanted at an agent's first ORM query): the bundle's text
 *   stays in every agent's memory;
 * - dist/agent/boot.cjs: the entry that compiles it (`node dist/agent/boot.cjs`);
 * - dist/agent/agent.code-cache: V8's code cache of it, written by one real start of the bundle
 *   (a throwaway workspace, a socket, /health and one authenticated call, then SIGTERM), so it
 *   holds what start-up compiles;
 * - agent.cjs.map (not referenced: for reading stack positions) and agent.cjs.LEGAL.txt (the
 *   bundled packages' license comments).
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { build, type Plugin } from 'esbuild';
import { AGENT_BOOT, AGENT_BUNDLE, AGENT_CODE_CACHE, DIST_DIR, REPO_ROOT } from '../server/common/build.js';

const OUR_SOURCES = new RegExp(`^${REPO_ROOT.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/(contracts|server|rest-bridge)/`);

/**
 * `import.meta.url` of each of our modules as it is in the per-file tree (dist/<path>.js), so the
 * paths they resolve from it (prisma/agent/, the repository root, the served API reference) hold
 * in the bundle; package code gets the bundle's own URL, which resolves packages the same way.
 */
const moduleUrls: Plugin = {
  name: 'module-urls',
  setup(pluginBuild) {
    pluginBuild.onLoad({ filter: /\.ts$/ }, async (args) => {
      if (!OUR_SOURCES.test(args.path)) return undefined;
      const source = await readFile(args.path, 'utf8');
      if (!source.includes('import.meta.url')) return undefined;
      const compiled = path.relative(REPO_ROOT, args.path).replace(/\.ts$/, '.js');
      return { contents: source.replaceAll('import.meta.url', `__moduleUrl(${JSON.stringify(compiled)})`), loader: 'ts' };
    });
  },
};

/** Prisma's query compiler as the CommonJS twin of the module its client imports, so it can stay in node_modules. */
const PRISMA_QUERY_COMPILER = '@prisma/client/runtime/query_compiler_small_bg.sqlite.wasm-base64';
const prismaQueryCompiler: Plugin = {
  name: 'prisma-query-compiler',
  setup(pluginBuild) {
    pluginBuild.onResolve({ filter: /^@prisma\/client\/runtime\/query_compiler_small_bg\.sqlite\.wasm-base64\.mjs$/ }, () => ({
      path: `${PRISMA_QUERY_COMPILER}.js`,
      external: true,
    }));
  },
};

// boot.ts compiles the file and calls the function; `__dirname` is dist/agent. Strict, as every
// module it holds was (esbuild's own "use strict" is no longer the first statement).
const BANNER = [
  '(function (exports, require, module, __filename, __dirname) {"use strict";',
  "const __moduleUrl = (file) => require('node:url').pathToFileURL(require('node:path').join(__dirname, '..', file)).href;",
  "const __bundleUrl = require('node:url').pathToFileURL(__filename).href;",
].join('\n');

export async function buildAgentBundle(): Promise<void> {
  const common = { bundle: true, platform: 'node', target: 'node20', format: 'cjs', logLevel: 'warning' } as const;
  await build({ ...common, entryPoints: [path.join(REPO_ROOT, 'server/agent/boot.ts')], outfile: AGENT_BOOT });
  const { outputFiles } = await build({
    ...common,
    entryPoints: [path.join(REPO_ROOT, 'server/agent/run.ts')],
    outfile: AGENT_BUNDLE,
    write: false,
    // OpenTelemetry's API stays in: prom-client loads it at start (its copy and the SDK's meet through a global).
    external: [
      'better-sqlite3',
      'pino-pretty',
      'grammy',
      '@opentelemetry/sdk-trace-base',
      '@opentelemetry/exporter-trace-otlp-http',
      '@opentelemetry/resources',
      // web_fetch's page reader (tools/web-page.ts): about 1 MB the agent loads only at its first fetch.
      '@mozilla/readability',
      'linkedom',
      'turndown',
    ],
    // A vm.Script taken from a code cache loses its import() callback (Node 20), so no import() may remain.
    supported: { 'dynamic-import': false },
    define: { 'import.meta.url': '__bundleUrl' },
    banner: { js: BANNER },
    footer: { js: '})' },
    plugins: [moduleUrls, prismaQueryCompiler],
    minifyWhitespace: true,
    minifySyntax: true,
    sourcemap: 'external',
    legalComments: 'external',
  });
  mkdirSync(path.dirname(AGENT_BUNDLE), { recursive: true });
  for (const file of outputFiles) {
    if (file.path === AGENT_BUNDLE) writeFileSync(file.path, `// ${createHash('sha256').update(file.text).digest('hex')}\n${file.text}`);
    else if (file.path === `${AGENT_BUNDLE}.map`) {
      // One line more at the top: the map's lines move down by one.
      const map = JSON.parse(file.text) as { mappings: string };
      writeFileSync(file.path, JSON.stringify({ ...map, mappings: `;${map.mappings}` }));
    } else writeFileSync(file.path, file.contents);
  }
  await writeAgentCodeCache();
}

/** GET `pathname` of an agent on a Unix socket; the status code, or undefined while it does not answer. */
function getOverSocket(socketPath: string, pathname: string, headers: Record<string, string> = {}): Promise<number | undefined> {
  return new Promise((resolve) => {
    const req = request({ socketPath, path: pathname, headers, timeout: 5_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', () => resolve(undefined));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

/** One start of the bundle that writes its code cache when it exits. */
async function writeAgentCodeCache(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'agent-code-cache-'));
  const socket = path.join(dir, 'agent.sock');
  const secret = randomBytes(24).toString('hex');
  const child = spawn(process.execPath, [AGENT_BOOT, '--write-code-cache'], {
    cwd: DIST_DIR,
    env: {
      AGENT_SOCKET: socket,
      AGENT_SECRET: secret,
      AGENT_WORKSPACE: path.join(dir, 'workspace'),
      AGENT_STATE_DIR: path.join(dir, 'state'),
      HEARTBEAT_INTERVAL: '0',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    const deadline = Date.now() + 60_000;
    while ((await getOverSocket(socket, '/health')) !== 200) {
      if (child.exitCode !== null || Date.now() > deadline) throw new Error('the agent bundle did not start (code cache run)');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await getOverSocket(socket, '/chats', { authorization: `Bearer ${secret}` });
    child.kill('SIGTERM');
    if ((await exited) !== 0 || !existsSync(AGENT_CODE_CACHE)) throw new Error('the agent bundle wrote no code cache');
    // Written under the agent's private umask; every agent reads it, whichever user runs them.
    chmodSync(AGENT_CODE_CACHE, 0o644);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}
