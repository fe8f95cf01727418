/**
 * The configuration reference is generated from the config schemas (scripts/config-reference.ts):
 * these fail when docs/configuration.md or .env.example is stale, when a variable has no meaning
 * on its schema, when code reads a variable the page does not list, or when server code reads
 * one by name outside the config modules.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { configReference, renderConfigurationPage, renderEnvExample } from '../../scripts/config-reference.js';
import { renderBenchmarksPage, renderReadme } from '../../scripts/docs/benchmarks.js';

const root = path.resolve(import.meta.dirname, '../..');
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');
const STALE = 'stale: run `npm run docs` and commit the result';

function sourceFiles(dir: string): string[] {
  return readdirSync(path.join(root, dir), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && /\.(ts|mts|mjs|js)$/.test(entry.name))
    .map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)))
    .filter((file) => !file.startsWith(`server${path.sep}generated`));
}

/** Names of environment variables a source reads: `process.env.X`, `env.X`, `env['X']`, `const { X } = process.env`. */
function variablesRead(source: string): string[] {
  const names = new Set<string>();
  for (const match of source.matchAll(/\b(?:process\.)?env\s*(?:\.\s*([A-Z][A-Z0-9_]*)\b|\[\s*['"`]([A-Z][A-Z0-9_]*)['"`]\s*\])/g))
    names.add((match[1] ?? match[2])!);
  for (const match of source.matchAll(/\{([^{}]*)\}\s*=\s*process\.env\b/g)) {
    for (const part of match[1]!.split(',')) {
      const name = /^\s*([A-Z][A-Z0-9_]*)\b/.exec(part)?.[1];
      if (name) names.add(name);
    }
  }
  return [...names];
}

describe('configuration reference', () => {
  it('docs/configuration.md is what the schemas say', () => {
    expect(read('docs/configuration.md'), `docs/configuration.md is ${STALE}`).toBe(renderConfigurationPage());
  });

  it('.env.example is what the schemas say', () => {
    expect(read('.env.example'), `.env.example is ${STALE}`).toBe(renderEnvExample());
  });

  it('every variable carries its meaning on its schema', () => {
    const missing = configReference().flatMap((service) => service.variables.filter((v) => !v.description).map((v) => `${service.title}: ${v.name}`));
    expect(missing, 'add .describe(…) or .meta({ description }) to these schemas').toEqual([]);
  });

  it('finds reads in every form the code uses', () => {
    const sample =
      'process.env.ALPHA; const x = env.BETA ?? 1; env[\'GAMMA\']; process.env["DELTA"]; const { EPSILON, ZETA: z } = process.env; env.lowercase; other.ETA';
    expect(variablesRead(sample).sort()).toEqual(['ALPHA', 'BETA', 'DELTA', 'EPSILON', 'GAMMA', 'ZETA']);
  });

  it('lists every variable read in server/, rest-bridge/ and scripts/', () => {
    const page = read('docs/configuration.md');
    // Set for a script by the program that runs it, not by an operator: the MCP conformance suite
    // hands scripts/mcp-conformance-client.ts a scenario's credentials.
    const setByTheirRunner = ['MCP_CONFORMANCE_CONTEXT'];
    const listed = new Set([...page.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)].map((m) => m[1]!).concat(setByTheirRunner));
    const unlisted: string[] = [];
    let seen = 0;
    for (const file of ['server', 'rest-bridge', 'scripts'].flatMap(sourceFiles)) {
      for (const name of variablesRead(read(file))) {
        seen++;
        if (!listed.has(name)) unlisted.push(`${name} (${file})`);
      }
    }
    expect(seen).toBeGreaterThan(50);
    expect(unlisted, 'read by the code but missing from docs/configuration.md: add them to a config schema').toEqual([]);
  });

  it('server code reads variables by name only in the config modules', () => {
    const configModules = /(^|\/)config\.ts$/;
    const offenders = ['server', 'rest-bridge']
      .flatMap(sourceFiles)
      .filter((file) => !configModules.test(file))
      .flatMap((file) => [...read(file).matchAll(/process\.env\s*(?:\.\s*[A-Z][A-Z0-9_]*|\[)/g)].map((m) => `${file}: ${m[0]}`));
    expect(offenders, 'read these through server/account/config.ts or server/agent/config.ts and pass the value on').toEqual([]);
  });
});

describe('benchmarks page', () => {
  it('docs/benchmarks.md is what bench/results/ says', () => {
    expect(read('docs/benchmarks.md'), `docs/benchmarks.md is ${STALE}`).toBe(renderBenchmarksPage());
  });

  it("README.md's headline table is what bench/results/run.json says", () => {
    expect(read('README.md'), `README.md's headline table is ${STALE}`).toBe(renderReadme(read('README.md')));
  });
});
