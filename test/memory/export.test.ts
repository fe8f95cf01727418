/**
 * `GET /api/v1/agent/export` through the account's REST proxy to real local agents: the zip holds
 * the workspace (not `.env`), every chat as JSONL and the tasks; each user gets their own agent's
 * export only, and none without a valid token. On the agent itself: a workspace over its quota is
 * exported up to it (the rest listed as left out), and a missing secret gets 401.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenPair as Pair } from '@contracts/account/tokens.js';
import { testDeviceId } from '../support/devices.js';
import { startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';
import { startTestAccount, startTestAgent, tempDir, type TestAccount } from '../support/servers.js';
import { readFrames } from '../support/sse.js';
import { openSse } from '../support/sse.js';
import { unzip } from '../support/unzip.js';

let account: TestAccount;
let model: ScriptedModel;
let api: string;
beforeAll(async () => {
  model = await startScriptedModel({ responder: () => ({ text: 'noted' }) });
  account = await startTestAccount('pglite', { AGENT_PROVISIONER: 'local', AGENT_IDLE_TIMEOUT: '0', LOG_LEVEL: 'silent', MODEL: model.modelSpec });
  api = `${account.url}/api/v1`;
});
afterAll(async () => {
  await account.stop();
  await model.close();
});

const guest = async (device: string): Promise<string> => {
  const res = await fetch(`${api}/auth/guest`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ device_id: testDeviceId(device) }),
  });
  return ((await res.json()) as Pair).access_token;
};
const as = (token: string) => ({ authorization: `Bearer ${token}` });
const json = (token: string) => ({ ...as(token), 'content-type': 'application/json' });

async function exportOf(token: string): Promise<Map<string, Buffer>> {
  const res = await fetch(`${api}/agent/export`, { headers: as(token) });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('application/zip');
  expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="agent-export-\d{4}-\d\d-\d\d\.zip"$/);
  return unzip(Buffer.from(await res.arrayBuffer()));
}

describe('export through the proxy', () => {
  it('zips the workspace, every chat as JSONL and the tasks, of the caller own agent only', async () => {
    const alice = await guest('export-alice');
    const bob = await guest('export-bob');
    expect(
      (await fetch(`${api}/agent/memory/MEMORY.md`, { method: 'PATCH', headers: json(alice), body: JSON.stringify({ content: '- alice likes tea\n' }) }))
        .status,
    ).toBe(200);
    await readFrames(
      await openSse(`${api}/agent/chat`, {
        method: 'POST',
        headers: json(alice),
        body: JSON.stringify({ chat_id: 'trip:lisbon', message: 'alice flies to Lisbon' }),
      }),
    );
    const task = await fetch(`${api}/agent/tasks`, {
      method: 'POST',
      headers: json(alice),
      body: JSON.stringify({ prompt: 'Check in for the flight', at: '2099-01-01T08:00:00+00:00' }),
    });
    expect(task.status).toBe(201);
    expect((await fetch(`${api}/agent/memory/USER.md`, { method: 'PATCH', headers: json(bob), body: JSON.stringify({ content: 'Name: Bob\n' }) })).status).toBe(
      200,
    );

    const zip = await exportOf(alice);
    expect(zip.get('workspace/MEMORY.md')?.toString()).toBe('- alice likes tea\n');
    const lines = zip
      .get('chats/trip%3Alisbon.jsonl')!
      .toString()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; name: string | null; content: string });
    expect(lines.map((l) => [l.type, l.name, l.content])).toEqual([
      ['text', 'user', 'alice flies to Lisbon'],
      ['text', null, 'noted'],
    ]);
    const { tasks } = JSON.parse(zip.get('tasks.json')!.toString()) as { tasks: Array<{ prompt: string }> };
    expect(tasks.map((t) => t.prompt)).toEqual(['Check in for the flight']);
    const manifest = JSON.parse(zip.get('manifest.json')!.toString()) as { format: number; chats: Array<{ chat_id: string }>; tasks: number };
    expect(manifest).toMatchObject({ format: 1, chats: [{ chat_id: 'trip:lisbon', file: 'chats/trip%3Alisbon.jsonl' }], tasks: 1 });

    // Bob's export is Bob's agent: nothing of Alice's.
    const bobs = await exportOf(bob);
    expect([...bobs.keys()].sort()).toEqual(['manifest.json', 'tasks.json', 'workspace/USER.md']);
    expect([...bobs.values()].some((bytes) => bytes.toString().includes('alice'))).toBe(false);
  });

  it('needs a valid access token', async () => {
    expect((await fetch(`${api}/agent/export`)).status).toBe(401);
    expect((await fetch(`${api}/agent/export`, { headers: { authorization: 'Bearer x.y.z' } })).status).toBe(401);
  });
});

describe('export on the agent', () => {
  it('leaves out protected files and what is over the quota, and refuses a missing secret', async () => {
    const workspace = await tempDir('export-ws');
    await writeFile(path.join(workspace, '.env'), 'SECRET=1');
    await writeFile(path.join(workspace, 'a.bin'), Buffer.alloc(700 * 1024, 1));
    await writeFile(path.join(workspace, 'b.bin'), Buffer.alloc(700 * 1024, 2));
    const agent = await startTestAgent({ AGENT_WORKSPACE: workspace, AGENT_WORKSPACE_QUOTA_MB: '1' });
    try {
      expect((await fetch(`${agent.url}/export`)).status).toBe(401);
      const res = await fetch(`${agent.url}/export`, { headers: agent.auth });
      expect(res.status).toBe(200);
      const zip = unzip(Buffer.from(await res.arrayBuffer()));
      expect([...zip.keys()].sort()).toEqual(['manifest.json', 'tasks.json', 'workspace/a.bin']);
      expect(zip.get('workspace/a.bin')!.equals(Buffer.alloc(700 * 1024, 1))).toBe(true);
      const manifest = JSON.parse(zip.get('manifest.json')!.toString()) as { workspace: { files: number; bytes: number; omitted_over_quota: string[] } };
      expect(manifest.workspace).toEqual({ files: 1, bytes: 700 * 1024, omitted_over_quota: ['b.bin'] });
    } finally {
      await agent.stop();
    }
  });
});
