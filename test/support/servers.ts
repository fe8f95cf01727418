/**
 * Real servers for tests: each call starts a service on a free loopback port with its own data
 * directory (and its own PostgreSQL database when asked), exactly as main.ts would.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { cp, mkdtemp, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startAccount, type RunningAccount } from '../../server/account/app.js';
import { loadAccountConfig, type AccountConfig } from '../../server/account/config.js';
import { openAccountStore } from '../../server/account/store.js';
import { startAgent, type RunningAgent } from '../../server/agent/app.js';
import { loadAgentConfig } from '../../server/agent/config.js';
import { createTestDatabase } from './postgres.js';
import type { Logger } from '../../server/common/log.js';
import { freePort } from '../../server/common/net.js';

export { freePort };

export async function tempDir(prefix: string): Promise<string> {
  return mkdtemp(path.join(tmpdir(), `${prefix}-`));
}

export interface TestAgent extends RunningAgent {
  secret: string;
  workspace: string;
  /** Where its agent.db lives (AGENT_STATE_DIR), beside the workspace. */
  stateDir: string;
  auth: { authorization: string };
  /** Stops the agent and removes its workspace (unless keepWorkspace). */
  stop(opts?: { keepWorkspace?: boolean }): Promise<void>;
}

/** `log`: a logger of the test's own (to read what the service logs); by default the service makes its own. */
export async function startTestAgent(env: Record<string, string> = {}, log?: Logger): Promise<TestAgent> {
  const secret = env.AGENT_SECRET ?? randomBytes(24).toString('hex');
  const workspace = env.AGENT_WORKSPACE ?? (await tempDir('agent-ws'));
  const config = loadAgentConfig({
    AGENT_PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    HEARTBEAT_INTERVAL: '0',
    ...env,
    AGENT_SECRET: secret,
    AGENT_WORKSPACE: workspace,
  });
  const agent = await startAgent(config, log);
  return {
    ...agent,
    secret,
    workspace,
    stateDir: config.stateDir,
    auth: { authorization: `Bearer ${secret}` },
    async stop(opts) {
      await agent.close();
      if (!opts?.keepWorkspace) for (const dir of [workspace, config.stateDir]) await rm(dir, { recursive: true, force: true });
    },
  };
}

let template: Promise<string> | undefined;

/**
 * An embedded account store made and migrated once for these migrations, copied into each test
 * service's DATA_DIR: creating a PGlite database costs seconds of CPU (its initdb and the first
 * migration), opening a copy a small part of that, and the suites start hundreds of services.
 * Keyed by the migrations' content, so a changed migration makes a new one; made aside and
 * renamed into place, so parallel test files never see half of one. What a service runs at start
 * (its migrations) runs on the copy as on a new database.
 */
function accountDbTemplate(): Promise<string> {
  template ??= (async () => {
    const migrations = fileURLToPath(new URL('../../prisma/account/migrations/', import.meta.url));
    const hash = createHash('sha256');
    for (const entry of (await readdir(migrations, { recursive: true })).sort()) {
      const file = path.join(migrations, entry);
      if ((await stat(file)).isFile()) hash.update(entry).update(await readFile(file));
    }
    const dir = path.join(tmpdir(), `account-db-template-${hash.digest('hex').slice(0, 16)}`);
    const db = path.join(dir, 'account-db');
    if (existsSync(path.join(db, 'PG_VERSION'))) return db;
    const building = await mkdtemp(path.join(tmpdir(), 'account-db-building-'));
    const store = await openAccountStore({ dataDir: building });
    await store.close();
    await rename(building, dir).catch(() => rm(building, { recursive: true, force: true }));
    return db;
  })();
  return template;
}

/**
 * Puts a migrated embedded account store into `dataDir` (a copy of the one above): for a service
 * or CLI a test runs as a process of its own on that directory, where a new store is not what is
 * tested (creating one costs PGlite's initdb: seconds of CPU).
 */
export async function seedAccountStore(dataDir: string): Promise<void> {
  await cp(await accountDbTemplate(), path.join(dataDir, 'account-db'), { recursive: true });
}

export interface TestAccount extends RunningAccount {
  dataDir: string;
  /** Stops the service and removes its data directory (unless keepData: a next instance opens it). */
  stop(opts?: { keepData?: boolean }): Promise<void>;
}

/**
 * `log` receives the service's log lines; `configure` changes what no variable sets (the webhook
 * retry schedule, say) before it starts; `freshStore` makes its embedded store from nothing instead
 * of from the migrated copy (tests of what a brand-new store does: its migrations, its files' modes).
 */
export async function startTestAccount(
  kind: 'pglite' | 'postgres' = 'pglite',
  env: Record<string, string> = {},
  options: { log?: Logger; configure?: (config: AccountConfig) => void; freshStore?: boolean } = {},
): Promise<TestAccount> {
  const dataDir = await tempDir('account-data');
  const database = kind === 'postgres' ? await createTestDatabase() : undefined;
  if (!database && !env.DATABASE_URL && !env.DATA_DIR && !options.freshStore) await seedAccountStore(dataDir);
  const port = String(await freePort());
  const config = loadAccountConfig({
    PORT: port,
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    DATA_DIR: dataDir,
    // Suites about other things sign in many times a minute from one address; the rate-limit
    // suite sets RATE_LIMIT_MULTIPLIER back to 1.
    RATE_LIMIT_MULTIPLIER: '1000',
    // Suites about other things start no agents ahead of need (test/lifecycle/warm-pool.test.ts turns the pool on).
    AGENT_WARM_POOL: '0',
    ...(database ? { DATABASE_URL: database.url } : {}),
    ...env,
  });
  options.configure?.(config);
  const account = await startAccount(config, options.log);
  return {
    ...account,
    dataDir: config.dataDir,
    async stop(opts) {
      await account.close();
      await database?.drop();
      if (!opts?.keepData) await rm(dataDir, { recursive: true, force: true });
    },
  };
}
