/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance` 0.1.13, the newest that
 * runs on Node 20) against the project's connector client, scripts/mcp-conformance-client.ts:
 * every client scenario that version lists, the auth ones included, each must end "OVERALL:
 * PASSED". The script is bundled once here (esbuild, as the agent is) so that each scenario's
 * client starts in a fraction of a second instead of compiling under tsx; it is the same code the
 * documented `npx tsx scripts/mcp-conformance-client.ts` runs. Scenarios run a few at a time: all
 * at once (the suite's own `--suite all`) overloads two cores into timeouts.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const suite = path.join(path.dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/conformance/package.json')), 'dist/index.js');
const AT_ONCE = 3;

/** The client scenarios this version of the suite lists. */
async function clientScenarios(): Promise<string[]> {
  const { stdout } = await run(process.execPath, [suite, 'list']);
  const section = stdout.slice(stdout.indexOf('Client scenarios'));
  return [...section.matchAll(/^\s+- (\S+)$/gm)].map((match) => match[1] as string);
}

describe('the MCP conformance suite against the connector client', () => {
  let dir: string;
  let client: string;

  beforeAll(async () => {
    // Inside the checkout, so that the bundle's packages resolve from its node_modules.
    await mkdir('node_modules/.cache', { recursive: true });
    dir = await mkdtemp(path.resolve('node_modules/.cache/mcp-conformance-'));
    client = path.join(dir, 'client.mjs');
    await build({
      entryPoints: ['scripts/mcp-conformance-client.ts'],
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      outfile: client,
      packages: 'external',
      // The project's own alias is not a package: bundled like the relative imports.
      alias: { '@contracts': path.resolve('contracts') },
      tsconfig: 'tsconfig.json',
      logLevel: 'error',
    });
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('passes every client scenario of 0.1.13, auth included', async () => {
    const scenarios = await clientScenarios();
    expect(scenarios).toEqual(
      expect.arrayContaining(['initialize', 'tools_call', 'sse-retry', 'auth/metadata-default', 'auth/scope-step-up', 'auth/client-credentials-jwt']),
    );
    const failed: string[] = [];
    const queue = [...scenarios];
    const worker = async () => {
      for (let scenario = queue.shift(); scenario; scenario = queue.shift()) {
        const outcome = await run(process.execPath, [suite, 'client', '--command', `node ${client}`, '--scenario', scenario, '--timeout', '60000'], {
          cwd: process.cwd(),
          maxBuffer: 16 * 1024 * 1024,
        }).then(
          ({ stdout, stderr }) => `${stdout}${stderr}`,
          (error: { stdout?: string; stderr?: string }) => `${error.stdout ?? ''}${error.stderr ?? ''}`,
        );
        if (!outcome.includes('OVERALL: PASSED')) failed.push(`${scenario}:\n${outcome.split('\n').slice(-15).join('\n')}`);
      }
    };
    await Promise.all(Array.from({ length: AT_ONCE }, worker));
    expect(failed).toEqual([]);
  }, 600_000);
});
