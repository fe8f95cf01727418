import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestAccount, type TestAccount } from '../support/servers.js';
import type { TokenPair as Pair } from '@contracts/account/tokens.js';
import { testDeviceId } from '../support/devices.js';

describe('REST proxy to the user own agent', () => {
  let account: TestAccount;
  let api: string;
  const guest = async (deviceId: string): Promise<string> => {
    const res = await fetch(`${api}/auth/guest`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ device_id: testDeviceId(deviceId) }),
    });
    return ((await res.json()) as Pair).access_token;
  };
  const asUser = (token: string) => ({ authorization: `Bearer ${token}` });
  /** A full (non-guest) account: a guest upgraded with a wallet-less shortcut is not available here, so flip the flag. */
  const fullUser = async (deviceId: string): Promise<string> => {
    const token = await guest(deviceId);
    const me = (await (await fetch(`${api}/auth/me`, { headers: asUser(token) })).json()) as { user_id: string };
    await account.services.store.db.user.update({ where: { id: me.user_id }, data: { tier: 'full' } });
    const res = await fetch(`${api}/auth/guest`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ device_id: testDeviceId(deviceId) }),
    });
    return ((await res.json()) as Pair).access_token;
  };
  const upload = (token: string, name: string, bytes: Buffer | string, dir?: string) => {
    const form = new FormData();
    if (dir) form.set('path', dir);
    form.set('file', new Blob([typeof bytes === 'string' ? bytes : new Uint8Array(bytes)]), name);
    return fetch(`${api}/agent/files/upload`, { method: 'POST', headers: asUser(token), body: form });
  };

  beforeAll(async () => {
    account = await startTestAccount('pglite', {
      AGENT_PROVISIONER: 'local',
      AGENT_IDLE_TIMEOUT: '0',
      LOG_LEVEL: 'silent',
    });
    api = `${account.url}/api/v1`;
  });
  afterAll(() => account.stop());

  it('needs a valid access token', async () => {
    expect((await fetch(`${api}/agent/workspace/tree`)).status).toBe(401);
    expect((await fetch(`${api}/agent/workspace/tree`, { headers: { authorization: 'Bearer x.y.z' } })).status).toBe(401);
  });

  it('streams uploads and downloads through, and keeps each user in their own agent', async () => {
    const alice = await fullUser('proxy-alice');
    const bob = await fullUser('proxy-bob');
    const content = 'hello from alice\n'.repeat(1000);
    const up = await upload(alice, 'note.txt', content);
    expect(up.status).toBe(200);
    expect(await up.json()).toMatchObject({ path: 'uploads/note.txt', size: content.length, name: 'note.txt' });

    const down = await fetch(`${api}/agent/files/uploads/note.txt`, { headers: asUser(alice) });
    expect(down.status).toBe(200);
    expect(await down.text()).toBe(content);

    const ranged = await fetch(`${api}/agent/files/uploads/note.txt`, { headers: { ...asUser(alice), range: 'bytes=0-4' } });
    expect(ranged.status).toBe(206);
    expect(await ranged.text()).toBe('hello');

    // Bob reaches only his own agent: Alice's file is not there, whatever the path.
    expect((await fetch(`${api}/agent/files/uploads/note.txt`, { headers: asUser(bob) })).status).toBe(404);
    const bobTree = (await (await fetch(`${api}/agent/workspace/tree`, { headers: asUser(bob) })).json()) as { tree: unknown[] };
    expect(JSON.stringify(bobTree)).not.toContain('note.txt');
    const aliceTree = (await (await fetch(`${api}/agent/workspace/tree`, { headers: asUser(alice) })).json()) as { tree: unknown[] };
    expect(JSON.stringify(aliceTree)).toContain('note.txt');
  });

  it('never forwards the caller credentials and never leaks the agent secret', async () => {
    const token = await fullUser('proxy-headers');
    const res = await fetch(`${api}/agent/health`, { headers: asUser(token) });
    expect(res.status).toBe(200);
    const agent = await account.services.store.db.agent.findFirst({ where: { user: { identities: { some: { subject: testDeviceId('proxy-headers') } } } } });
    const secret = agent ? (await account.services.agents.registry.byName(agent.name))?.secret : undefined;
    expect(secret).toBeTruthy();
    const all = JSON.stringify([...res.headers]);
    expect(all).not.toContain(secret as string);
  });

  it('passes SSE through as a stream', async () => {
    const token = await fullUser('proxy-sse');
    const res = await fetch(`${api}/agent/chat`, {
      method: 'POST',
      headers: { ...asUser(token), 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'hi', chat_id: 'c1' }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(await res.text()).toContain('"type":"done"');
  });

  it('applies guest limits: no messenger, 5 MB uploads', async () => {
    const token = await guest('proxy-guest');
    const messenger = await fetch(`${api}/agent/messenger/status`, { headers: asUser(token) });
    expect(messenger.status).toBe(403);
    expect(await messenger.json()).toMatchObject({ code: 'GUEST_LIMITED' });
    // Another spelling names no route at all (test/security/path-spelling.test.ts walks them all).
    const sneaky = await fetch(`${api}/agent//%6Dessenger/status`, { headers: asUser(token) });
    expect(sneaky.status).toBe(404);
    const big = await upload(token, 'big.bin', Buffer.alloc(5 * 1024 * 1024 + 10));
    expect(big.status).toBe(413);
    const small = await upload(token, 'small.bin', Buffer.alloc(1024));
    expect(small.status).toBe(200);
  });
});

describe('guest message quota', () => {
  let account: TestAccount;
  beforeAll(async () => {
    account = await startTestAccount('pglite', { AGENT_PROVISIONER: 'local', AGENT_IDLE_TIMEOUT: '0', RATE_LIMIT_MULTIPLIER: '1' });
  });
  afterAll(() => account.stop());

  it('lets a guest send 50 messages a day, then answers 429 GUEST_QUOTA', async () => {
    const api = `${account.url}/api/v1`;
    const pair = (await (
      await fetch(`${api}/auth/guest`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ device_id: testDeviceId('quota') }),
      })
    ).json()) as Pair;
    const send = () =>
      fetch(`${api}/agent/chat`, {
        method: 'POST',
        headers: { authorization: `Bearer ${pair.access_token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'hi', chat_id: 'quota' }),
      });
    for (let i = 0; i < 50; i++) {
      const res = await send();
      expect(res.status).toBe(200);
      await res.text();
    }
    const over = await send();
    expect(over.status).toBe(429);
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(3600);
    expect(await over.json()).toMatchObject({ code: 'GUEST_QUOTA' });
    // The web client's way to send (tRPC, message in a POST body) draws on the same quota.
    const started = await fetch(`${account.url}/trpc/agent.chat.start`, {
      method: 'POST',
      headers: { authorization: `Bearer ${pair.access_token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ json: { message: 'hi', chat_id: 'quota' } }),
    });
    expect(started.status).toBe(429);
    expect(JSON.stringify(await started.json())).toContain('GUEST_QUOTA');
  }, 120_000);
});
