/**
 * Idle means idle (real HTTP: account service, local sandboxed agents, scripted model): the idle
 * sweep stops only agents that say they are idle, so a reply longer than the idle timeout whose
 * client left completes and is whole in history, and the agent sleeps afterwards; a stop that
 * must abandon a run (shutdown) ends it with an `error` saying it was interrupted, in the live
 * stream and in history.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalProvisioner } from '../../server/account/agents/provisioners/local/provisioner.js';
import { INTERRUPTED } from '@contracts/agent/chat.js';
import type { TokenPair } from '@contracts/account/tokens.js';
import { until } from '../chat/helpers.js';
import { testDeviceId } from '../support/devices.js';
import { lastUserText, startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';
import { startTestAccount, startTestAgent, tempDir, type TestAccount } from '../support/servers.js';
import { events, openSse, readFrames } from '../support/sse.js';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { rm } from 'node:fs/promises';

let model: ScriptedModel;
const TICKS = 14;

beforeAll(async () => {
  model = await startScriptedModel({
    responder: (request) => {
      const text = lastUserText(request);
      // 14 chunks 250 ms apart: 3.5 s, several idle timeouts (1 s) long.
      if (text === 'long') return { text: Array.from({ length: TICKS }, (_, i) => `tick ${i} `), delayMs: 250 };
      if (text === 'hang') return { text: ['partial '], hang: true };
      return { text: 'ok' };
    },
  });
});
afterAll(async () => {
  await model?.close();
});

const accountEnv = (extra: Record<string, string> = {}) => ({
  AGENT_PROVISIONER: 'local',
  AGENT_IDLE_TIMEOUT: '1',
  AGENT_STOP_GRACE: '0.5',
  MODEL: model.modelSpec,
  ...extra,
});

async function guest(account: TestAccount, label: string): Promise<TokenPair> {
  const res = await fetch(`${account.url}/api/v1/auth/guest`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ device_id: testDeviceId(label) }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as TokenPair;
}

const bearer = (pair: TokenPair) => ({ authorization: `Bearer ${pair.access_token}` });
const postChat = (account: TestAccount, pair: TokenPair, chatId: string, message: string) =>
  openSse(`${account.url}/api/v1/agent/chat`, {
    method: 'POST',
    headers: { ...bearer(pair), 'content-type': 'application/json' },
    body: JSON.stringify({ message, chat_id: chatId }),
  });
const history = async (account: TestAccount, pair: TokenPair, chatId: string) =>
  (
    (await (await fetch(`${account.url}/api/v1/agent/chat/${chatId}/history`, { headers: bearer(pair) })).json()) as {
      messages: Array<{ type: string; content?: string }>;
    }
  ).messages;

describe('the agent reports what it is doing', () => {
  it('GET /lifecycle needs the agent secret; says idle, and the next heartbeat only while HEARTBEAT.md has content', async () => {
    const agent = await startTestAgent({ HEARTBEAT_INTERVAL: '600' });
    try {
      expect((await fetch(`${agent.url}/lifecycle`)).status).toBe(401);
      expect((await fetch(`${agent.url}/lifecycle`, { headers: { authorization: 'Bearer not-the-secret-at-all' } })).status).toBe(401);
      const before = await (await fetch(`${agent.url}/lifecycle`, { headers: agent.auth })).json();
      expect(before).toMatchObject({
        busy: false,
        next_wake_at: null,
        activity: { chat_runs: 0, subagent_runs: 0, heartbeat: false, requests: 0, messenger: false },
      });
      await writeFile(path.join(agent.workspace, 'HEARTBEAT.md'), '- check the inbox\n');
      const after = (await (await fetch(`${agent.url}/lifecycle`, { headers: agent.auth })).json()) as { next_wake_at: string };
      const due = Date.parse(after.next_wake_at) - Date.now();
      expect(due).toBeGreaterThan(590_000);
      expect(due).toBeLessThanOrEqual(600_000);
    } finally {
      await agent.stop();
    }
  });
});

describe('idle sweep', () => {
  let account: TestAccount;
  beforeAll(async () => {
    account = await startTestAccount('pglite', accountEnv());
  });
  afterAll(async () => {
    await account?.stop();
  });

  it('lets a reply longer than the idle timeout finish after its client left, then puts the agent to sleep', async () => {
    const pair = await guest(account, 'idle-long');
    const stream = await postChat(account, pair, 'long', 'long');
    expect(stream.status).toBe(200);
    const first = await readFrames(stream, (_f, all) => all.filter((f) => f.data.type === 'text').length >= 2);
    expect(events(first).filter((e) => e.type === 'text')).toHaveLength(2);
    stream.close();
    const provisioner = account.services.agents.provisioner as LocalProvisioner;
    // The whole reply lands in history although the client is gone and the idle timeout passed.
    const expected = Array.from({ length: TICKS }, (_, i) => `tick ${i} `).join('');
    await until(async () => {
      const messages = await history(account, pair, 'long');
      return messages.some((m) => m.type === 'text' && m.content === expected);
    }, 20_000);
    const messages = await history(account, pair, 'long');
    expect(messages.filter((m) => m.type === 'error')).toEqual([]);
    // Then, idle, it is stopped.
    await until(() => provisioner.processes().length === 0, 15_000);
  });
});

describe('a stop that must abandon a run', () => {
  it('ends the relayed stream with reconnect and keeps the cut reply with an interrupted error in history', async () => {
    const dataDir = await tempDir('lifecycle-interrupt');
    try {
      const first = await startTestAccount('pglite', accountEnv({ DATA_DIR: dataDir, AGENT_IDLE_TIMEOUT: '0' }));
      const pair = await guest(first, 'interrupted');
      const stream = await postChat(first, pair, 'cut', 'hang');
      await readFrames(stream, (f) => f.data.type === 'text');
      const rest = readFrames(stream);
      await first.close();
      // The stopping service ends the relayed stream at once (docs/deployment.md, stopping); the
      // agent, stopped with it, records the cut reply, which the client finds when it follows up.
      expect(events(await rest)).toEqual([{ type: 'reconnect' }]);

      const second = await startTestAccount('pglite', accountEnv({ DATA_DIR: dataDir }));
      try {
        const again = await guest(second, 'interrupted');
        expect(await history(second, again, 'cut')).toEqual([
          { type: 'text', content: 'hang', name: 'user', message_id: expect.any(String) },
          { type: 'text', content: 'partial ', cut: true },
          { type: 'error', content: INTERRUPTED },
        ]);
      } finally {
        await second.close();
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
