/**
 * Real servers for tests: each call starts a service on a free loopback port with its own data
 * directory (and its own PostgreSQL database when asked), exactly as main.ts would.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startAccount, type RunningAccount } from '../../server/account/app.js';
import { loadAccountConfig, type AccountConfig } from '../../server/account/config.js';
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

export interface TestAccount extends RunningAccount {
  dataDir: string;
  /** Stops the service and removes its data directory (unless keepData: a next instance opens it). */
  stop(opts?: { keepData?: boolean }): Promise<void>;
}

/** `log` receives the service's log lines; `configure` changes what no variable sets (the webhook retry schedule, say) before it starts. */
export async function startTestAccount(
  kind: 'pglite' | 'postgres' = 'pglite',
  env: Record<string, string> = {},
  options: { log?: Logger; configure?: (config: AccountConfig) => void } = {},
): Promise<TestAccount> {
  const dataDir = await tempDir('account-data');
  const database = kind === 'postgres' ? await createTestDatabase() : undefined;
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
