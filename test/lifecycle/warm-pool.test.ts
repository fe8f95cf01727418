/**
 * The warm pool and agents started at sign-in (real HTTP: account service, local sandboxed agents,
 * scripted model). AGENT_WARM_POOL agents start ahead of need; a new guest's sign-in takes one (no
 * cold start), whose workspace is empty and whose id and secret are nobody else's; the pool refills;
 * two users signing up at once never share one; pooled agents count in AGENT_MAX_RUNNING and are
 * the first to go when a user needs the slot. A returning user's sleeping agent starts at sign-in,
 * never by stopping another user's agent. With AGENT_WARM_POOL=0 nothing starts ahead.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalProvisioner } from '../../server/account/agents/provisioners/local/provisioner.js';
import type { TokenPair } from '@contracts/account/tokens.js';
import { until } from '../chat/helpers.js';
import { testDeviceId } from '../support/devices.js';
import { lastUserText, startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';
import { events, openSse, readFrames } from '../support/sse.js';

let model: ScriptedModel;
beforeAll(async () => {
  model = await startScriptedModel({
    responder: (request) => (lastUserText(request) === 'hang' ? { text: ['working '], hang: true } : { text: `echo ${lastUserText(request)}` }),
  });
});
afterAll(async () => {
  await model?.close();
});

const startAccount = (env: Record<string, string>) =>
  startTestAccount('pglite', { AGENT_PROVISIONER: 'local', AGENT_IDLE_TIMEOUT: '0', AGENT_STOP_GRACE: '0.5', MODEL: model.modelSpec, ...env });

async function guest(account: TestAccount, label: string): Promise<TokenPair & { userId: string }> {
  const res = await fetch(`${account.url}/api/v1/auth/guest`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ device_id: testDeviceId(label) }),
  });
  expect(res.status).toBe(200);
  const pair = (await res.json()) as TokenPair;
  const claims = JSON.parse(Buffer.from(pair.access_token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { sub: string };
  return { ...pair, userId: claims.sub };
}
const bearer = (pair: TokenPair) => ({ authorization: `Bearer ${pair.access_token}` });
const getJson = async (account: TestAccount, pair: TokenPair, route: string) => {
  const res = await fetch(`${account.url}/api/v1/agent${route}`, { headers: bearer(pair) });
  expect(res.status).toBe(200);
  return res.json();
};
const post = (account: TestAccount, pair: TokenPair, message: string, chatId = 'c') =>
  openSse(`${account.url}/api/v1/agent/chat`, {
    method: 'POST',
    headers: { ...bearer(pair), 'content-type': 'application/json' },
    body: JSON.stringify({ message, chat_id: chatId }),
  });
const say = async (account: TestAccount, pair: TokenPair, message: string) => events(await readFrames(await post(account, pair, message)));
/** A chat that keeps the user's agent busy (the idle sweep and evictions leave it alone) until `stop`. */
async function busy(account: TestAccount, pair: TokenPair): Promise<{ stop(): Promise<void> }> {
  const stream = await post(account, pair, 'hang', 'busy');
  expect(stream.status).toBe(200);
  await readFrames(stream, (f) => f.data.type === 'text');
  return {
    async stop() {
      stream.close();
      expect((await fetch(`${account.url}/api/v1/agent/chat/busy/stop`, { method: 'POST', headers: bearer(pair) })).status).toBe(204);
    },
  };
}
const running = (account: TestAccount, agentId: string | undefined) =>
  provisionerOf(account)
    .processes()
    .some((p) => p.agentId === agentId);
const provisionerOf = (account: TestAccount) => account.services.agents.provisioner as LocalProvisioner;
const pooledIds = (account: TestAccount) =>
  provisionerOf(account)
    .processes()
    .filter((p) => p.pooled)
    .map((p) => p.agentId);
const agentIdOf = async (account: TestAccount, userId: string) => (await account.services.agents.registry.forUser(userId))?.id;

describe('a pool of two', () => {
  let account: TestAccount;
  beforeAll(async () => {
    account = await startAccount({ AGENT_WARM_POOL: '2', AGENT_MAX_RUNNING: '8' });
  });
  afterAll(async () => {
    await account?.stop();
  });

  it('fills to its size with agents that belong to nobody', async () => {
    await until(() => provisionerOf(account).stats().pooled === 2, 30_000);
    const ids = pooledIds(account);
    expect(ids).toHaveLength(2);
    for (const id of ids) expect(await account.services.agents.registry.exists(id)).toBe(false);
    const metrics = await (await fetch(`${account.url}/metrics`)).text();
    expect(metrics).toMatch(/^agents_pooled(\{[^}]*\})? 2$/m);
  });

  it("serves a new guest's sign-in with a pooled agent: empty workspace, a name like any agent's, replies; the pool refills", async () => {
    await until(() => provisionerOf(account).stats().pooled === 2, 30_000);
    const before = pooledIds(account);
    const claims = provisionerOf(account).stats().poolClaims;
    const pair = await guest(account, 'pool-new');
    // The sign-in itself claimed it: no agent call yet.
    await until(() => provisionerOf(account).stats().poolClaims === claims + 1);
    const agentId = await agentIdOf(account, pair.userId);
    expect(before).toContain(agentId);
    expect(await getJson(account, pair, '/workspace/tree')).toEqual({ tree: [] });
    expect(await getJson(account, pair, '/chats')).toEqual({ chats: [] });
    expect(await getJson(account, pair, '/health')).toMatchObject({ agent_name: `local-${agentId}` });
    // Its gateway now forwards (and meters) its model calls: unclaimed, it would reach nothing.
    expect(await say(account, pair, 'hi')).toEqual([{ type: 'text', content: 'echo hi' }, { type: 'done' }]);
    // The unclaimed mark is gone from its directory; nothing else but its workspace and state is there.
    expect((await readdir(path.join(account.dataDir, 'agents', agentId as string))).sort()).toEqual(['state', 'workspace']);
    await until(() => provisionerOf(account).stats().pooled === 2, 30_000);
    expect(pooledIds(account)).not.toContain(agentId);
  });

  it('never gives two users signing up at once the same agent, nor one user what another wrote', async () => {
    await until(() => provisionerOf(account).stats().pooled === 2, 30_000);
    const pairs = await Promise.all(['pool-c1', 'pool-c2', 'pool-c3'].map((label) => guest(account, label)));
    const answers = await Promise.all(pairs.map((pair, i) => say(account, pair, `user ${i}`)));
    expect(answers).toEqual([0, 1, 2].map((i) => [{ type: 'text', content: `echo user ${i}` }, { type: 'done' }]));
    const agents = await Promise.all(pairs.map((pair) => account.services.agents.registry.forUser(pair.userId)));
    expect(new Set(agents.map((a) => a?.id)).size).toBe(3);
    expect(new Set(agents.map((a) => a?.secret)).size).toBe(3);
    // Each history holds its own user's message only.
    for (const [i, pair] of pairs.entries()) {
      const { messages } = (await getJson(account, pair, '/chat/c/history')) as { messages: Array<{ content?: string; name?: string }> };
      expect(messages.filter((m) => m.name === 'user').map((m) => m.content)).toEqual([`user ${i}`]);
    }
  });
});

describe('a pool under AGENT_MAX_RUNNING', () => {
  let account: TestAccount;
  let peak = 0;
  let watcher: NodeJS.Timeout;
  beforeAll(async () => {
    account = await startAccount({ AGENT_WARM_POOL: '1', AGENT_MAX_RUNNING: '2', AGENT_IDLE_TIMEOUT: '1' });
    watcher = setInterval(() => (peak = Math.max(peak, provisionerOf(account).processes().length)), 10);
  });
  afterAll(async () => {
    clearInterval(watcher);
    await account?.stop();
  });

  it('counts pooled agents, refills only into a free slot, and stops a pooled agent before any user agent to make room', async () => {
    const provisioner = provisionerOf(account);
    await until(() => provisioner.stats().pooled === 1, 30_000);
    const a = await guest(account, 'cap-pool-a');
    await until(() => provisioner.stats().poolClaims === 1 && provisioner.stats().pooled === 1, 30_000);
    const aAgent = await agentIdOf(account, a.userId);
    // A sleeps (idle); the pool keeps its one agent, idle or not.
    await until(() => !running(account, aAgent), 10_000);
    expect(provisioner.stats()).toMatchObject({ pooled: 1, running: 1 });

    const b = await guest(account, 'cap-pool-b');
    await until(() => provisioner.stats().poolClaims === 2 && provisioner.stats().pooled === 1, 30_000);
    const bAgent = await agentIdOf(account, b.userId);
    const work = await busy(account, b);
    const pidOfB = provisioner.processes().find((p) => p.agentId === bAgent)?.pid;
    // At the cap (B busy, one pooled): A comes back; the pooled agent makes room. Were B the one
    // asked to go, A would get 503 AGENT_CAPACITY, as B is busy.
    expect(await getJson(account, a, '/chats')).toEqual({ chats: [] });
    expect(running(account, aAgent)).toBe(true);
    expect(provisioner.processes().find((p) => p.agentId === bAgent)?.pid).toBe(pidOfB);
    expect(provisioner.stats()).toMatchObject({ pooled: 0, running: 2, evicted: 0 });
    await work.stop();
    expect(peak).toBeLessThanOrEqual(2);
  });
});

describe('without a pool (AGENT_WARM_POOL=0), and sign-in starts', () => {
  let account: TestAccount;
  beforeAll(async () => {
    account = await startAccount({ AGENT_WARM_POOL: '0', AGENT_MAX_RUNNING: '1', AGENT_IDLE_TIMEOUT: '1' });
  });
  afterAll(async () => {
    await account?.stop();
  });

  it('starts nothing ahead; a new guest starts nothing at sign-in, and its first call starts its agent', async () => {
    const provisioner = provisionerOf(account);
    const a = await guest(account, 'nopool-a');
    await provisioner.warmUp(a.userId);
    expect(provisioner.processes()).toHaveLength(0);
    expect(await say(account, a, 'cold')).toEqual([{ type: 'text', content: 'echo cold' }, { type: 'done' }]);
    expect(provisioner.stats()).toMatchObject({ pooled: 0, poolClaims: 0 });
  });

  it("starts a returning user's sleeping agent at sign-in, but never by stopping another user's", async () => {
    const provisioner = provisionerOf(account);
    const a = await guest(account, 'nopool-a');
    const aAgent = await agentIdOf(account, a.userId);
    await until(() => provisioner.processes().length === 0, 10_000);
    // Signing in again starts it, before any call.
    await guest(account, 'nopool-a');
    await until(() => running(account, aAgent) && provisioner.stats().starting === 0, 30_000);

    // B's own call may stop A (idle) for the only slot; A signing in again while B works may not stop B.
    const b = await guest(account, 'nopool-b');
    const work = await busy(account, b);
    const bAgent = await agentIdOf(account, b.userId);
    expect(provisioner.processes().map((p) => p.agentId)).toEqual([bAgent]);
    await guest(account, 'nopool-a');
    await provisioner.warmUp(a.userId);
    expect(provisioner.processes().map((p) => p.agentId)).toEqual([bAgent]);
    await work.stop();
  });
});
