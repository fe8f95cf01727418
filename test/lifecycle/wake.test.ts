/**
 * Wake on schedule (real HTTP: account service, local sandboxed agents, scripted model): an
 * agent with HEARTBEAT.md goes to sleep (no process), the account service keeps its next wake
 * time and starts it when due, the heartbeat reaches the model while the user is away, and the
 * agent sleeps again. Claims are exclusive: two schedulers on one database wake an agent once.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalProvisioner } from '../../server/account/agents/provisioners/local/provisioner.js';
import { WakeScheduler } from '../../server/account/agents/provisioners/wake-scheduler.js';
import type { TokenPair } from '@contracts/account/tokens.js';
import { until } from '../chat/helpers.js';
import { testDeviceId } from '../support/devices.js';
import { lastUserText, startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';
import { postgresReachable } from '../support/postgres.js';

const pgAvailable = await postgresReachable();
import { events, openSse, readFrames } from '../support/sse.js';

const silentLog = { info: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined } as never;
const isHeartbeat = (text: string) => text.startsWith('Heartbeat (');

let model: ScriptedModel;
let account: TestAccount;
const saved = process.env.HEARTBEAT_INTERVAL;

beforeAll(async () => {
  model = await startScriptedModel({
    responder: (request) => (isHeartbeat(lastUserText(request)) ? { text: 'Remember the milk.' } : { text: 'hello' }),
  });
  // Local agents take HEARTBEAT_* from the account service's environment.
  process.env.HEARTBEAT_INTERVAL = '4';
  account = await startTestAccount('pglite', {
    AGENT_PROVISIONER: 'local',
    AGENT_IDLE_TIMEOUT: '1',
    AGENT_STOP_GRACE: '0.5',
    AGENT_WAKE_POLL: '0.3',
    MODEL: model.modelSpec,
  });
});
afterAll(async () => {
  await account?.stop();
  await model?.close();
  if (saved === undefined) delete process.env.HEARTBEAT_INTERVAL;
  else process.env.HEARTBEAT_INTERVAL = saved;
});

describe('wake on schedule', () => {
  it('wakes a sleeping agent for its heartbeat, which reaches the model while the user is away; then it sleeps again', async () => {
    const res = await fetch(`${account.url}/api/v1/auth/guest`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ device_id: testDeviceId('wake') }),
    });
    const pair = (await res.json()) as TokenPair;
    const auth = { authorization: `Bearer ${pair.access_token}` };
    const stream = await openSse(`${account.url}/api/v1/agent/chat`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'hi', chat_id: 'main' }),
    });
    expect(events(await readFrames(stream))).toEqual([{ type: 'text', content: 'hello' }, { type: 'done' }]);
    // The only agent so far: this guest's.
    const agent = await account.services.store.db.agent.findFirstOrThrow({ where: { kind: 'local' } });
    await writeFile(path.join(account.dataDir, 'agents', agent.id, 'workspace', 'HEARTBEAT.md'), '- Tell the user to buy milk.\n');

    const provisioner = account.services.agents.provisioner as LocalProvisioner;
    await until(() => provisioner.processes().length === 0, 15_000);
    const asleepAt = model.requests.length;
    const row = await account.services.store.db.agent.findUniqueOrThrow({ where: { id: agent.id } });
    expect(row.nextWakeAt).toBeInstanceOf(Date);

    // While no agent process runs, the heartbeat still happens.
    await until(() => model.requests.slice(asleepAt).some((r) => isHeartbeat(lastUserText(r))), 20_000);
    await until(() => provisioner.processes().length === 0, 15_000);
    const woken = await account.services.store.db.agent.findUniqueOrThrow({ where: { id: agent.id } });
    expect(woken.nextWakeAt?.getTime()).toBeGreaterThan(Date.now() - 1_000);

    // The alert waits for the user.
    const pending = (await (await fetch(`${account.url}/api/v1/agent/pending`, { headers: auth })).json()) as {
      messages: Array<{ content: string; source: string }>;
    };
    expect(pending.messages).toContainEqual(expect.objectContaining({ content: 'Remember the milk.', source: 'heartbeat' }));
  });

  it('lets one scheduler at a time claim a due agent, and retries a failed wake with backoff (PGlite)', () => claimsOnce(account));
});

describe('wake claims on PostgreSQL', () => {
  it.skipIf(!pgAvailable)('lets one scheduler at a time claim a due agent, and retries a failed wake with backoff', async () => {
    const pgAccount = await startTestAccount('postgres', { AGENT_PROVISIONER: 'static' });
    try {
      await claimsOnce(pgAccount);
    } finally {
      await pgAccount.stop();
    }
  });
});

/** Two schedulers on one database: one wake; a failure backs off; a success clears the schedule. */
async function claimsOnce(account: TestAccount): Promise<void> {
  const db = account.services.store.db;
  const user = await db.user.create({ data: { tier: 'full' } });
  const agent = await account.services.agents.registry.add({
    name: `claim-${user.id}`,
    url: 'http://127.0.0.1:0',
    secret: 'x'.repeat(32),
    kind: 'local',
    userId: user.id,
  });
  await db.agent.update({ where: { id: agent.id }, data: { nextWakeAt: new Date(Date.now() - 1_000) } });
  const woken: string[] = [];
  let fail = true;
  const target = {
    wake: async (userId: string) => {
      woken.push(userId);
      await new Promise((r) => setTimeout(r, 100));
      if (fail) throw new Error('no room');
    },
  };
  const a = new WakeScheduler(db, target, silentLog, { pollMs: 1_000, kind: 'local' });
  const b = new WakeScheduler(db, target, silentLog, { pollMs: 1_000, kind: 'local' });
  await Promise.all([a.tick(), b.tick(), a.tick()]);
  expect(woken.filter((id) => id === user.id)).toHaveLength(1);
  const failed = await db.agent.findUniqueOrThrow({ where: { id: agent.id } });
  expect(failed.wakeAttempts).toBe(1);
  expect(failed.nextWakeAt!.getTime()).toBeGreaterThan(Date.now() + 1_000);
  expect(failed.wakeLeaseUntil).toBeNull();

  // Due again: the retry succeeds and clears the schedule until the agent reports a new one.
  await db.agent.update({ where: { id: agent.id }, data: { nextWakeAt: new Date(Date.now() - 1_000) } });
  fail = false;
  await a.tick();
  const done = await db.agent.findUniqueOrThrow({ where: { id: agent.id } });
  expect(done).toMatchObject({ wakeAttempts: 0, nextWakeAt: null, wakeLeaseUntil: null });
}
