/**
 * One user's open event streams through the account proxy are capped (AGENT_STREAMS_PER_USER):
 * a client opening chat streams in a loop would otherwise hold sockets here and on its agent, each
 * with a keepalive every 2 s, without end. REST and tRPC share the ceiling; a refused stream
 * counts no guest message; a closed stream gives its slot back; other users are not affected.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AccountRouter } from '@contracts/account/router.js';
import type { TokenPair } from '@contracts/account/tokens.js';
import { bearerTrpcClient } from '../../server/account/agents/client.js';
import { until } from '../chat/helpers.js';
import { testDeviceId } from '../support/devices.js';
import { lastUserText, startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';
import { openSse, readFrames, type SseStream } from '../support/sse.js';

const SLOTS = 3;
let model: ScriptedModel;
let account: TestAccount;

beforeAll(async () => {
  // Every reply sends one chunk and then hangs: its stream stays open until the client leaves.
  model = await startScriptedModel({ responder: (request) => ({ text: [`${lastUserText(request)} `], hang: true }) });
  account = await startTestAccount('pglite', {
    AGENT_PROVISIONER: 'local',
    AGENT_IDLE_TIMEOUT: '0',
    AGENT_STREAMS_PER_USER: String(SLOTS),
    MODEL: model.modelSpec,
  });
});
afterAll(async () => {
  await account?.stop();
  await model?.close();
});

async function guest(label: string): Promise<TokenPair> {
  const res = await fetch(`${account.url}/api/v1/auth/guest`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ device_id: testDeviceId(label) }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as TokenPair;
}

const bearer = (pair: TokenPair) => ({ authorization: `Bearer ${pair.access_token}` });

/** A chat message over REST, its stream read up to the first text. */
async function chat(pair: TokenPair, chatId: string): Promise<SseStream> {
  const stream = await openSse(`${account.url}/api/v1/agent/chat`, {
    method: 'POST',
    headers: { ...bearer(pair), 'content-type': 'application/json' },
    body: JSON.stringify({ message: `hello ${chatId}`, chat_id: chatId }),
  });
  if (stream.status === 200) await readFrames(stream, (f) => f.data.type === 'text');
  return stream;
}

const messagesLeft = async (pair: TokenPair) =>
  ((await (await fetch(`${account.url}/api/v1/account`, { headers: bearer(pair) })).json()) as { usage: { messages_left_today: number } }).usage
    .messages_left_today;

describe('open streams per user', () => {
  it('refuses a stream over the ceiling with 429 TOO_MANY_STREAMS, over REST and tRPC alike, without counting a message', async () => {
    const pair = await guest('stream-slots-full');
    const open = [await chat(pair, 'a'), await chat(pair, 'b'), await chat(pair, 'c')];
    expect(open.map((s) => s.status)).toEqual([200, 200, 200]);
    const left = await messagesLeft(pair);

    const refused = await fetch(`${account.url}/api/v1/agent/chat`, {
      method: 'POST',
      headers: { ...bearer(pair), 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'one more', chat_id: 'd' }),
    });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(await refused.json()).toMatchObject({ code: 'TOO_MANY_STREAMS' });
    // A reconnect is a stream too.
    expect((await fetch(`${account.url}/api/v1/agent/chat/a/stream`, { headers: bearer(pair) })).status).toBe(429);
    // The refused message was never admitted: the guest's count did not move.
    expect(await messagesLeft(pair)).toBe(left);

    // tRPC subscriptions share the ceiling.
    const api = bearerTrpcClient<AccountRouter>(`${account.url}/trpc`, () => `Bearer ${pair.access_token}`);
    const error = await new Promise<unknown>((resolve) => {
      const sub = api.agent.chat.stream.subscribe({ chat_id: 'a' }, { onData: () => undefined, onError: resolve, onComplete: () => resolve(undefined) });
      setTimeout(() => sub.unsubscribe(), 10_000);
    });
    expect(error).toMatchObject({ data: { code: 'TOO_MANY_STREAMS' } });

    // Another user is not affected.
    const other = await chat(await guest('stream-slots-other'), 'x');
    expect(other.status).toBe(200);
    other.close();

    // A stream the client leaves gives its slot back.
    open[0]!.close();
    await until(async () => (await chat(pair, 'e')).status === 200, 10_000);
    for (const stream of open) stream.close();
  });
});
