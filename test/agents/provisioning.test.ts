import { execFile } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentEnvironment, LocalProvisioner } from '../../server/account/agents/provisioners/local/provisioner.js';
import { SecretBox } from '../../server/account/agents/secrets.js';
import { EgressGateway } from '../../server/account/agents/egress/gateway.js';
import { AgentLauncher } from '../../server/account/agents/provisioners/local/launcher.js';
import { agentFetch } from '../../server/account/agents/transport.js';
import { loadAccountConfig } from '../../server/account/config.js';
import { cliEntry } from '../support/entries.js';
import { seedAccountStore, startTestAccount, tempDir, type TestAccount } from '../support/servers.js';

const run = promisify(execFile);
const silentLog = { info: () => undefined, warn: () => undefined, error: () => undefined } as never;

async function newUser(account: TestAccount): Promise<string> {
  return (await account.services.store.db.user.create({ data: { tier: 'full' } })).id;
}

async function agentAnswers(url: string, secret: string): Promise<number> {
  const agent = agentFetch(url);
  // The body is dropped: left unread, undici's parser stays paused and trips an assertion when a
  // stopping agent closes the connection (its last answers say `Connection: close`).
  return agent.fetch(`${agent.base}/openapi.json`, { headers: { authorization: `Bearer ${secret}` } }).then(
    async (r) => {
      await r.body?.cancel();
      return r.status;
    },
    () => 0,
  );
}

async function eventually(check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('condition not met in time');
}

describe('agent secrets at rest', () => {
  it('seals and opens; a tampered or foreign box fails', () => {
    const box = new SecretBox(Buffer.alloc(32, 7));
    const sealed = box.seal('s3cret');
    expect(sealed).not.toContain('s3cret');
    expect(box.open(sealed)).toBe('s3cret');
    const tampered = `${sealed.slice(0, -2)}${sealed.endsWith('A') ? 'B' : 'A'}A`;
    expect(() => box.open(tampered)).toThrow();
    expect(() => new SecretBox(Buffer.alloc(32, 8)).open(sealed)).toThrow();
  });
});

/** An account service (for its store and registry) and a local provisioner with the given idle timeout. */
async function provisionerRig(idleTimeoutSeconds: number): Promise<{ account: TestAccount; provisioner: LocalProvisioner }> {
  const account = await startTestAccount('pglite', { AGENT_PROVISIONER: 'static' });
  const provisioner = new LocalProvisioner(account.services.agents.registry, silentLog, {
    dataDir: account.dataDir,
    idleTimeoutSeconds,
    agentEnv: { PATH: process.env.PATH, LOG_LEVEL: 'silent', HEARTBEAT_INTERVAL: '0' },
    launcher: new AgentLauncher(
      loadAccountConfig({}).agentLauncher,
      new EgressGateway([], silentLog, { limits: loadAccountConfig({}).egressLimits }),
      silentLog,
    ),
  });
  return { account, provisioner };
}

describe('what a local agent inherits', () => {
  it('passes model and agent settings, never a key or the account service secrets', () => {
    const env = agentEnvironment({
      PATH: '/bin',
      MODEL: 'openai:gpt',
      OPENAI_API_KEY: 'k1',
      MODEL_API_KEY: 'k2',
      AGENT_EXEC: 'off',
      SUBAGENT_TIMEOUT: '60',
      HEARTBEAT_INTERVAL: '0',
      DATABASE_URL: 'postgres://secret',
      AGENT_SECRETS_KEY: 'x',
      SIGNING_KEYS_FILE: '/k',
      SMTP_URL: 'smtp://u:p@h',
      IDPA_CLIENT_SECRET: 's',
      REDIS_URL: 'redis://r',
      TELEGRAM_BOT_TOKEN: 't',
    });
    expect(Object.keys(env).sort()).toEqual(['AGENT_EXEC', 'HEARTBEAT_INTERVAL', 'PATH', 'SUBAGENT_TIMEOUT']);
  });
});

describe('local provisioner', () => {
  let account: TestAccount;
  let provisioner: LocalProvisioner;
  beforeAll(async () => {
    ({ account, provisioner } = await provisionerRig(0));
  });
  afterAll(async () => {
    await provisioner.close();
    await account.stop();
  });

  it('starts one agent per user on first use, with its own secret, port and workspace', async () => {
    const [u1, u2] = [await newUser(account), await newUser(account)];
    const a1 = await provisioner.agentFor(u1);
    expect(await agentAnswers(a1.url, a1.secret)).toBe(200);
    expect(await agentAnswers(a1.url, 'wrong-secret-wrong-secret')).toBe(401);
    const again = await provisioner.agentFor(u1);
    expect(again.url).toBe(a1.url);
    const a2 = await provisioner.agentFor(u2);
    expect(a2.url).not.toBe(a1.url);
    expect(a2.secret).not.toBe(a1.secret);
    const row = await account.services.store.db.agent.findUnique({ where: { userId: u1 } });
    expect(row?.secretEncrypted).not.toContain(a1.secret);
    expect(row?.url).toBe(a1.url);
  });

  it('starts exactly one agent for concurrent first uses', async () => {
    const user = await newUser(account);
    const before = provisioner.processes().length;
    const agents = await Promise.all(Array.from({ length: 5 }, () => provisioner.agentFor(user)));
    expect(new Set(agents.map((a) => a.url)).size).toBe(1);
    expect(provisioner.processes().length).toBe(before + 1);
  });

  it('restarts an agent that dies (kill -9) with the same secret', async () => {
    const user = await newUser(account);
    const agent = await provisioner.agentFor(user);
    const pid = provisioner.processes().find((p) => p.url === agent.url)?.pid;
    process.kill(pid as number, 'SIGKILL');
    await eventually(async () => {
      const now = provisioner.processes().find((p) => p.agentId === agent.id);
      return now !== undefined && now.pid !== pid && (await agentAnswers(now.url, agent.secret)) === 200;
    });
  });
});

describe('idle agents', () => {
  let account: TestAccount;
  let provisioner: LocalProvisioner;
  beforeAll(async () => {
    ({ account, provisioner } = await provisionerRig(1));
  });
  afterAll(async () => {
    await provisioner.close();
    await account.stop();
  });

  it('are stopped after the idle timeout and started again on next use', async () => {
    const user = await newUser(account);
    const first = await provisioner.agentFor(user);
    await eventually(async () => (await agentAnswers(first.url, first.secret)) === 0, 10_000);
    expect(provisioner.processes()).toHaveLength(0);
    const second = await provisioner.agentFor(user);
    expect(await agentAnswers(second.url, second.secret)).toBe(200);
  });
});

describe('static provisioner and the agents CLI', () => {
  it('answers 503 until an agent is assigned, then serves the assigned one', async () => {
    const dataDir = await tempDir('static-agents');
    await seedAccountStore(dataDir);
    const first = await startTestAccount('pglite', { AGENT_PROVISIONER: 'static', DATA_DIR: dataDir });
    const user = await newUser(first);
    await expect(first.services.agents.provisioner.agentFor(user)).rejects.toMatchObject({ status: 503, appCode: 'AGENT_UNAVAILABLE' });
    // The embedded store admits one process at a time: the CLI runs while the service is stopped.
    await first.stop();

    const { BASE_URL: _vite, ...parentEnv } = process.env;
    const env = { ...parentEnv, DATA_DIR: dataDir, LOG_LEVEL: 'silent' };
    const cli = (...args: string[]) => run(process.execPath, [...cliEntry('agents'), ...args], { env });
    const add = await cli('add', 'vm-1', 'http://127.0.0.1:9', '--user', user);
    expect(add.stdout).toMatch(/added agent vm-1 at http:\/\/127\.0\.0\.1:9\nits secret .*: \S{40,}/);
    const secret = /: (\S+)$/.exec(add.stdout.trim())?.[1];
    expect((await cli('list')).stdout).toContain('vm-1');
    await expect(cli('add', 'vm-1', 'http://127.0.0.1:9')).rejects.toMatchObject({ code: 1 });

    const second = await startTestAccount('pglite', { AGENT_PROVISIONER: 'static', DATA_DIR: dataDir });
    expect(await second.services.agents.provisioner.agentFor(user)).toMatchObject({ name: 'vm-1', url: 'http://127.0.0.1:9', secret });
    await second.stop();

    expect((await cli('remove', 'vm-1')).stdout).toContain('removed');
    expect((await cli('list')).stdout).not.toContain('vm-1');
    await rm(dataDir, { recursive: true, force: true });
  }, 180_000);
});
