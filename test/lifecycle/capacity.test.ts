/**
 * The running-agent cap (real HTTP: account service, local sandboxed agents, scripted model):
 * with AGENT_MAX_RUNNING=2 a third user's call stops the least recently used idle agent (which
 * comes back, with its history, on its next call); when every running agent is busy, a call that
 * needs another agent gets 503 AGENT_CAPACITY with Retry-After and no process is started.
 * /metrics shows agents_running and agents_evicted_total.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalProvisioner } from '../../server/account/agents/provisioners/local/provisioner.js';
import { defaultMaxRunningAgents } from '../../server/account/agents/config.js';
import type { TokenPair } from '@contracts/account/tokens.js';
import { testDeviceId } from '../support/devices.js';
import { lastUserText, startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';
import { events, openSse, readFrames } from '../support/sse.js';

let model: ScriptedModel;
let account: TestAccount;
let provisioner: LocalProvisioner;
let peak = 0;
let watcher: NodeJS.Timeout;

beforeAll(async () => {
  model = await startScriptedModel({
    responder: (request) => (lastUserText(request) === 'hang' ? { text: ['working '], hang: true } : { text: `echo ${lastUserText(request)}` }),
  });
  account = await startTestAccount('pglite', {
    AGENT_PROVISIONER: 'local',
    AGENT_IDLE_TIMEOUT: '0',
    AGENT_MAX_RUNNING: '2',
    AGENT_STOP_GRACE: '0.5',
    MODEL: model.modelSpec,
  });
  provisioner = account.services.agents.provisioner as LocalProvisioner;
  watcher = setInterval(() => (peak = Math.max(peak, provisioner.processes().length)), 20);
});
afterAll(async () => {
  clearInterval(watcher);
  await account?.stop();
  await model?.close();
});

async function guest(label: string): Promise<TokenPair> {
  const res = await fetch(`${account.url}/api/v1/auth/guest`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ device_id: testDeviceId(label) }),
  });
  return (await res.json()) as TokenPair;
}
const bearer = (pair: TokenPair) => ({ authorization: `Bearer ${pair.access_token}` });
const post = (pair: TokenPair, chatId: string, message: string) =>
  openSse(`${account.url}/api/v1/agent/chat`, {
    method: 'POST',
    headers: { ...bearer(pair), 'content-type': 'application/json' },
    body: JSON.stringify({ message, chat_id: chatId }),
  });
const say = async (pair: TokenPair, message: string) => events(await readFrames(await post(pair, 'c', message)));
const metric = async (name: string) => Number(new RegExp(`^${name}\\{[^}]*\\} (\\d+)`, 'm').exec(await (await fetch(`${account.url}/metrics`)).text())?.[1]);

describe('running-agent cap', () => {
  it('defaults to what the host memory holds at ~100 MB per agent, leaving room for the service', () => {
    expect(defaultMaxRunningAgents(24 * 1024 ** 3)).toBe(235);
    expect(defaultMaxRunningAgents(512 * 1024 ** 2)).toBe(1);
  });

  it('stops the least recently used idle agent to start another; the stopped one comes back with its state', async () => {
    const [a, b, c] = [await guest('cap-a'), await guest('cap-b'), await guest('cap-c')];
    expect(await say(a, 'one')).toEqual([{ type: 'text', content: 'echo one' }, { type: 'done' }]);
    expect(await say(b, 'two')).toEqual([{ type: 'text', content: 'echo two' }, { type: 'done' }]);
    expect(provisioner.processes()).toHaveLength(2);
    expect(await say(c, 'three')).toEqual([{ type: 'text', content: 'echo three' }, { type: 'done' }]);
    expect(provisioner.processes()).toHaveLength(2);
    expect(await metric('agents_evicted_total')).toBe(1);
    // A was least recently used: it was the one stopped; its next call brings it back (B makes room).
    const history = await (await fetch(`${account.url}/api/v1/agent/chat/c/history`, { headers: bearer(a) })).json();
    expect(history).toMatchObject({
      messages: [
        { type: 'text', content: 'one', name: 'user' },
        { type: 'text', content: 'echo one' },
      ],
    });
    expect(await metric('agents_evicted_total')).toBe(2);
    expect(await metric('agents_running')).toBe(2);
    expect(peak).toBeLessThanOrEqual(2);
  });

  it('answers 503 AGENT_CAPACITY with Retry-After when every running agent is busy, and starts nothing', async () => {
    const [a, c, d] = [await guest('cap-a'), await guest('cap-c'), await guest('cap-d')];
    const busyA = await post(a, 'long', 'hang');
    const busyC = await post(c, 'long', 'hang');
    await readFrames(busyA, (f) => f.data.type === 'text');
    await readFrames(busyC, (f) => f.data.type === 'text');
    const evicted = await metric('agents_evicted_total');

    const refused = await fetch(`${account.url}/api/v1/agent/chat`, {
      method: 'POST',
      headers: { ...bearer(d), 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'hi', chat_id: 'c' }),
    });
    expect(refused.status).toBe(503);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await refused.json()).toMatchObject({ code: 'AGENT_CAPACITY' });
    expect(provisioner.processes()).toHaveLength(2);
    expect(await metric('agents_evicted_total')).toBe(evicted);

    // Once one of them is done, the waiting user gets an agent.
    busyA.close();
    expect((await fetch(`${account.url}/api/v1/agent/chat/long/stop`, { method: 'POST', headers: bearer(a) })).status).toBe(204);
    expect(await say(d, 'four')).toEqual([{ type: 'text', content: 'echo four' }, { type: 'done' }]);
    busyC.close();
    expect(peak).toBeLessThanOrEqual(2);
  });
});
