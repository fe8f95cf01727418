/**
 * Sending and stopping through the account service (real HTTP, local agents, scripted model):
 * the SDK sends a 32,000-character message in a POST body (never in a URL) and the reply is
 * joined by run id; `POST /api/v1/agent/chat/{chat_id}/stop` and `agent.chat.stop` stop only the
 * caller's own run, with the agent's statuses relayed.
 */
import { TRPCClientError } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccountClient, memoryTokenStorage } from '../../client/sdk/account.js';
import { bearerTrpcClient } from '../../server/account/agents/client.js';
import type { AccountRouter } from '../../server/account/router.js';
import type { TokenPair as Pair } from '@contracts/account/tokens.js';
import { lastUserText, startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';
import { events, openSse, readFrames } from '../support/sse.js';
import { until } from '../chat/helpers.js';
import { testDeviceId } from '../support/devices.js';

let account: TestAccount;
let model: ScriptedModel;
let api: string;
const savedModel = process.env.MODEL;

beforeAll(async () => {
  model = await startScriptedModel({
    responder: (request) => {
      const text = lastUserText(request);
      if (text.startsWith('hang')) return { text: ['partial '], hang: true };
      return { text: `got ${text.length} characters` };
    },
  });
  // Local agents reach the model as the account service is configured (its environment, and
  // its configuration where calls go through its egress gateway).
  process.env.MODEL = model.modelSpec;
  account = await startTestAccount('pglite', { AGENT_PROVISIONER: 'local', AGENT_IDLE_TIMEOUT: '0', MODEL: model.modelSpec });
  api = `${account.url}/api/v1`;
});
afterAll(async () => {
  await account?.stop();
  await model?.close();
  if (savedModel === undefined) delete process.env.MODEL;
  else process.env.MODEL = savedModel;
});

const guest = async (deviceId: string): Promise<Pair> => {
  const res = await fetch(`${api}/auth/guest`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ device_id: testDeviceId(deviceId) }),
  });
  return (await res.json()) as Pair;
};
const bearer = (pair: Pair) => ({ authorization: `Bearer ${pair.access_token}` });
const trpcAs = (pair: Pair) => bearerTrpcClient<AccountRouter>(`${account.url}/trpc`, () => `Bearer ${pair.access_token}`);
const restStop = (chatId: string, headers: Record<string, string>) => fetch(`${api}/agent/chat/${chatId}/stop`, { method: 'POST', headers });
const codeOf = (error: unknown) => (error instanceof TRPCClientError ? (error.data as { code?: string; httpStatus?: number }) : { code: String(error) });

describe('sending through the proxy', () => {
  it('the SDK sends a 32,000-character message in a POST body; the reply is joined by run id over REST SSE', async () => {
    const seen: Array<{ url: string; method: string; body: string }> = [];
    const recording: typeof fetch = async (input, init) => {
      seen.push({
        url: String(input instanceof Request ? input.url : input),
        method: init?.method ?? 'GET',
        body: typeof init?.body === 'string' ? init.body : '',
      });
      return fetch(input, init);
    };
    const sdk = createAccountClient({ url: account.url, storage: memoryTokenStorage(), fetch: recording });
    await sdk.signInAsGuest(testDeviceId('send-sdk'));
    const message = 'long message '.repeat(2_500).slice(0, 32_000);
    expect(message).toHaveLength(32_000);

    const started = await sdk.trpc.agent.chat.start.mutate({ message, chat_id: 'long' });
    const sent = seen.filter((r) => r.body.includes(message));
    expect(sent.map((r) => r.method)).toEqual(['POST']);
    expect(seen.some((r) => r.url.includes('long%20message') || r.url.includes('long message'))).toBe(false);

    const stream = await openSse(`${api}/agent/chat/long/stream`, {
      headers: { authorization: `Bearer ${await sdk.accessToken()}`, 'last-event-id': started.last_event_id },
    });
    expect(stream.status).toBe(200);
    expect(events(await readFrames(stream))).toEqual([{ type: 'text', content: 'got 32000 characters' }, { type: 'done' }]);
    const history = await sdk.trpc.agent.chat.history.query({ chat_id: 'long' });
    expect(history.messages[0]).toEqual({ type: 'text', content: message, name: 'user', message_id: expect.any(String) });
  });

  it('refuses one character over the bound before any agent run', async () => {
    const sdk = createAccountClient({ url: account.url, storage: memoryTokenStorage() });
    await sdk.signInAsGuest(testDeviceId('send-over'));
    const requests = model.requests.length;
    const error = await sdk.trpc.agent.chat.start.mutate({ message: 'x'.repeat(32_001), chat_id: 'over' }).catch((e: unknown) => e);
    expect(codeOf(error)).toMatchObject({ code: 'VALIDATION_FAILED', httpStatus: 400 });
    expect(model.requests.length).toBe(requests);
  });

  it('POST /chat with an SSE answer works through the proxy as before', async () => {
    const pair = await guest('send-rest');
    const res = await openSse(`${api}/agent/chat`, {
      method: 'POST',
      headers: { ...bearer(pair), 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'y'.repeat(32_000), chat_id: 'rest' }),
    });
    expect(res.status).toBe(200);
    expect(events(await readFrames(res))).toEqual([{ type: 'text', content: 'got 32000 characters' }, { type: 'done' }]);
  });
});

describe('stop through the proxy', () => {
  it("stops only the caller's own run; relays 204, 409 and 404; history shows the reply as stopped", async () => {
    const alice = await guest('stop-alice');
    const bob = await guest('stop-bob');
    const stream = await openSse(`${api}/agent/chat`, {
      method: 'POST',
      headers: { ...bearer(alice), 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'hang on', chat_id: 'shared' }),
    });
    const first = await readFrames(stream, (f) => f.data.type === 'text');
    expect(events(first)).toEqual([{ type: 'text', content: 'partial ' }]);

    // Bob names Alice's chat id: his own agent has no such chat, and Alice's run goes on.
    const bobRest = await restStop('shared', bearer(bob));
    expect(bobRest.status).toBe(404);
    expect(await bobRest.json()).toMatchObject({ code: 'CHAT_NOT_FOUND' });
    expect(
      codeOf(
        await trpcAs(bob)
          .agent.chat.stop.mutate({ chat_id: 'shared' })
          .catch((e: unknown) => e),
      ),
    ).toMatchObject({ code: 'CHAT_NOT_FOUND', httpStatus: 404 });
    // Inputs cannot name an agent or a user.
    const sneaky = { chat_id: 'shared', user_id: 'alice', agent: 'alice' } as unknown as { chat_id: string };
    expect(
      codeOf(
        await trpcAs(bob)
          .agent.chat.stop.mutate(sneaky)
          .catch((e: unknown) => e),
      ),
    ).toMatchObject({ code: 'CHAT_NOT_FOUND' });
    expect(await trpcAs(alice).agent.chat.active.query({ chat_id: 'shared' })).toEqual({ active: true, user_message: 'hang on' });

    // Without a valid access token nothing reaches an agent.
    expect((await restStop('shared', {})).status).toBe(401);
    expect((await restStop('shared', { authorization: 'Bearer not.a.token' })).status).toBe(401);
    expect((await restStop('shared', { authorization: `Bearer ${alice.refresh_token}` })).status).toBe(401);
    expect(await trpcAs(alice).agent.chat.active.query({ chat_id: 'shared' })).toMatchObject({ active: true });

    const res = await restStop('shared', bearer(alice));
    expect(res.status).toBe(204);
    expect(events(await readFrames(stream))).toEqual([{ type: 'error', content: 'stopped' }, { type: 'done' }]);
    await until(() => model.openStreams() === 0);

    expect(
      codeOf(
        await trpcAs(alice)
          .agent.chat.stop.mutate({ chat_id: 'shared' })
          .catch((e: unknown) => e),
      ),
    ).toMatchObject({ code: 'RUN_NOT_ACTIVE', httpStatus: 409 });
    const again = await restStop('shared', bearer(alice));
    expect(again.status).toBe(409);
    expect((await trpcAs(alice).agent.chat.history.query({ chat_id: 'shared' })).messages).toEqual([
      { type: 'text', content: 'hang on', name: 'user', message_id: expect.any(String) },
      { type: 'text', content: 'partial ', cut: true },
      { type: 'error', content: 'stopped' },
    ]);
  });

  it('agent.chat.start then agent.chat.stop over tRPC; the subscription sees the stopped end', async () => {
    const pair = await guest('stop-trpc');
    const client = trpcAs(pair);
    const started = await client.agent.chat.start.mutate({ message: 'hang again', chat_id: 'tr' });
    const got: Array<{ type: string; content?: string }> = [];
    const ended = new Promise<void>((resolve, reject) => {
      const sub = client.agent.chat.stream.subscribe(
        { chat_id: 'tr', lastEventId: started.last_event_id },
        {
          onData(item) {
            const event = ('data' in item ? item.data : item) as { type: string; content?: string };
            got.push(event);
            if (event.type === 'text') void client.agent.chat.stop.mutate({ chat_id: 'tr' }).catch(reject);
            if (event.type === 'done') {
              sub.unsubscribe();
              resolve();
            }
          },
          onError: reject,
        },
      );
    });
    await ended;
    expect(got.filter((e) => e.type !== 'keepalive')).toEqual([{ type: 'text', content: 'partial ' }, { type: 'error', content: 'stopped' }, { type: 'done' }]);
  });

  it.each(['a%20b', 'x'.repeat(129)])('refuses the chat id %s with 400 from the agent', async (id) => {
    const pair = await guest('stop-malformed');
    const res = await restStop(id, bearer(pair));
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 'VALIDATION_FAILED' });
  });

  // An encoded slash or NUL is no spelling of a route segment: the proxy answers before any agent.
  it.each(['..%2F..%2Fhealth', '%00'])('refuses the chat id %s with 404 from the proxy', async (id) => {
    const pair = await guest('stop-malformed');
    const res = await restStop(id, bearer(pair));
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ code: 'ROUTE_NOT_FOUND' });
  });
});
