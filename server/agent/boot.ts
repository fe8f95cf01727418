/**
 * How production starts an agent: `node dist/agent/boot.cjs` (local agents, the Kubernetes Pod).
 * The whole agent is one script, dist/agent/agent.cjs (run.ts and what it loads, bundled by
 * scripts/agent-bundle.ts), compiled from the V8 code cache the build made by running it once
 * (dist/agent/agent.code-cache): a start neither resolves and reads hundreds of module files nor
 * parses megabytes of JavaScript (docs/performance.md, "An agent's start"). Node 20 has no
 * compile cache for modules (module.enableCompileCache came in Node 22), so the bundle is a
 * CommonJS-style function compiled here by vm.Script, whose `cachedData` is V8's code cache.
 *
 * The cache is only read here, never written by an agent: it lives beside the bundle, read-only
 * to every agent (the local sandbox binds dist/ read-only, a Pod's root file system is read-only),
 * because a code cache is code, and one an agent could write would run a tenant's code in later
 * agents. V8 refuses a cache made by another V8 or under other flags (so the agent's flags are set
 * before the compile, as in the build's run); it checks the source only by its length, so the
 * cache carries the bundle's first line (`// <sha256>`) and is offered to no other bundle.
 *
 * `--write-code-cache` (scripts/agent-bundle.ts only): when the agent exits, write the cache of
 * everything compiled until then.
 */
import './process-tuning.js';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Script } from 'node:vm';
import type { BootReport, runAgent } from './run.js';

const bundle = path.join(__dirname, 'agent.cjs');
const cacheFile = path.join(__dirname, 'agent.code-cache');
// ASCII only (esbuild escapes everything else), so it is read without decoding UTF-8.
const source = readFileSync(bundle, 'latin1');
const bundleId = Buffer.from(source.slice(0, source.indexOf('\n') + 1), 'latin1');

let cache: Buffer | undefined;
try {
  cache = readFileSync(cacheFile);
} catch {
  // No cache: compile from the source.
}
const fits = cache?.subarray(0, bundleId.length).equals(bundleId) ?? false;
// The file is one function expression (scripts/agent-bundle.ts): compiled as read, never copied.
const script = new Script(source, {
  filename: bundle,
  cachedData: fits ? cache?.subarray(bundleId.length) : undefined,
});
const codeCache: BootReport['codeCache'] = !cache ? 'missing' : !fits || script.cachedDataRejected ? 'rejected' : 'used';

if (process.argv.includes('--write-code-cache')) {
  process.once('exit', () => {
    writeFileSync(`${cacheFile}.tmp`, Buffer.concat([bundleId, script.createCachedData()]));
    renameSync(`${cacheFile}.tmp`, cacheFile);
  });
}

const agent = { exports: {} as { runAgent: typeof runAgent } };
(script.runInThisContext() as (...args: unknown[]) => void)(agent.exports, createRequire(bundle), agent, bundle, __dirname);
void agent.exports.runAgent({ codeCache });
