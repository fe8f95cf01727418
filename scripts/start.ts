/**
 * `npm start`: the whole product on embedded defaults, from the compiled build (made or refreshed
 * first when the sources are newer: scripts/build.ts). The account service runs with PGlite
 * under DATA_DIR (unless DATABASE_URL is set), serves the web client, and starts each user's
 * agent on first use (AGENT_PROVISIONER=local), with workspaces under DATA_DIR/agents/.
 * Agents run sandboxed (bubblewrap, installed here when missing: scripts/ensure-sandbox.sh); they
 * get MODEL from this environment, and their model calls get the provider keys on the way out.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { accountEnv } from '../server/account/config.js';
import { ConfigError, parseConfig } from '../server/common/config.js';
import { buildIfStale } from './build.js';

spawnSync('bash', [path.join(import.meta.dirname, 'ensure-sandbox.sh')], { stdio: 'inherit' });

// The compiled services and the web client, rebuilt only when their sources changed.
await buildIfStale({ web: true });

// Read through the account service's schema, so its defaults hold here too and a bad value stops
// before anything starts.
let settings;
try {
  settings = parseConfig(accountEnv.pick({ DATA_DIR: true, HOST: true, PORT: true, MODEL: true }), process.env);
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  console.error(`account: ${error.message}`);
  process.exit(2);
}
const dataDir = path.resolve(settings.DATA_DIR);
mkdirSync(dataDir, { recursive: true });
const host = settings.HOST;
const port = String(settings.PORT);

const account = spawn(process.execPath, ['dist/server/account/main.js'], {
  env: { ...process.env, DATA_DIR: dataDir, HOST: host, PORT: port },
  stdio: 'inherit',
});
account.on('exit', (code, signal) => process.exit(code ?? (signal ? 0 : 1)));
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => account.kill(signal));

console.log(
  [
    '',
    `  web client    http://${host}:${port}/`,
    `  account API   http://${host}:${port}/api/v1   (OpenAPI: /api/v1/openapi.json, tRPC: /trpc)`,
    `  your agent    http://${host}:${port}/api/v1/agent/…   (started per user on first use)`,
    `  data          ${dataDir}${settings.MODEL ? '' : '   (no MODEL set: agents answer that no model is configured)'}`,
    '',
  ].join('\n'),
);
