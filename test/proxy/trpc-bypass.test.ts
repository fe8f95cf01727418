/**
 * The REST proxy does not reach the agent's own tRPC endpoint: through `/api/v1/agent/trpc/…`
 * a guest would call messenger procedures (and send chat messages) without the guest policy.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { TokenPair } from '@contracts/account/tokens.js';
import { testDeviceId } from '../support/devices.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';

let account: TestAccount;
beforeAll(async () => {
  account = await startTestAccount('pglite', { AGENT_PROVISIONER: 'local', AGENT_IDLE_TIMEOUT: '0' });
});
afterAll(async () => {
  await account?.stop();
});

it('refuses /agent/trpc/… in every spelling; the policy-checked paths still answer', async () => {
  const api = `${account.url}/api/v1`;
  const pair = (await (
    await fetch(`${api}/auth/guest`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ device_id: testDeviceId('trpc-bypass') }),
    })
  ).json()) as TokenPair;
  const auth = { authorization: `Bearer ${pair.access_token}` };
  expect((await fetch(`${api}/agent/messenger/status`, { headers: auth })).status).toBe(403);
  for (const path of [
    '/agent/trpc/messenger.status',
    '/agent//trpc/messenger.status',
    '/agent/TRPC/messenger.status',
    '/agent/%74rpc/messenger.status',
    '/agent/trpc',
  ]) {
    const res = await fetch(`${api}${path}`, { headers: auth });
    expect(res.status, path).toBe(404);
  }
  const chat = await fetch(`${api}/agent/trpc/chat.start`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ json: { chat_id: 'x', message: 'hi' } }),
  });
  expect(chat.status).toBe(404);
  expect((await fetch(`${api}/agent/health`, { headers: auth })).status).toBe(200);
});
