/**
 * The list of chats through the account service (real HTTP, local agents, scripted model):
 * `GET /api/v1/agent/chats`, `PATCH /api/v1/agent/chats/{chat_id}` and `agent.chats.*` reach only
 * the caller's own agent; the agent's refusals (400, 404) are relayed; without a valid access
 * token nothing reaches an agent; the agent's OpenAPI document (read through the proxy) lists them.
 */
import { TRPCClientError } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearerTrpcClient } from '../../server/account/agents/client.js';
import type { AccountRouter } from '../../server/account/router.js';
import type { TokenPair as Pair } from '@contracts/account/tokens.js';
import { startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';
import { events, openSse, readFrames } from '../support/sse.js';

let account: TestAccount;
let model: ScriptedModel;
let api: string;
const savedModel = process.env.MODEL;

beforeAll(async () => {
  model = await startScriptedModel({ responder: () => ({ text: 'fine' }) });
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

// Guest device ids are at least 16 characters: pad the readable names.
const guest = async (deviceId: string): Promise<Pair> => {
  const res = await fetch(`${api}/auth/guest`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ device_id: `${deviceId}-device-id-for-tests` }),
  });
  return (await res.json()) as Pair;
};
const bearer = (pair: Pair) => ({ authorization: `Bearer ${pair.access_token}` });
const trpcAs = (pair: Pair) => bearerTrpcClient<AccountRouter>(`${account.url}/trpc`, () => `Bearer ${pair.access_token}`);
const codeOf = (error: unknown) => (error instanceof TRPCClientError ? (error.data as { code?: string; httpStatus?: number }) : { code: String(error) });

async function chat(pair: Pair, chatId: string, message: string): Promise<void> {
  const res = await openSse(`${api}/agent/chat`, {
    method: 'POST',
    headers: { ...bearer(pair), 'content-type': 'application/json' },
    body: JSON.stringify({ message, chat_id: chatId }),
  });
  expect(events(await readFrames(res)).at(-1)).toEqual({ type: 'done' });
}
const restList = async (pair: Pair) => {
  const res = await fetch(`${api}/agent/chats`, { headers: bearer(pair) });
  expect(res.status).toBe(200);
  return ((await res.json()) as { chats: Array<{ chat_id: string; title: string; active: boolean }> }).chats;
};
const restRename = (chatId: string, body: unknown, headers: Record<string, string>) =>
  fetch(`${api}/agent/chats/${chatId}`, { method: 'PATCH', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('the chat list through the proxy', () => {
  it("each user sees and renames only their own agent's chats, over REST and tRPC", async () => {
    const alice = await guest('chats-alice');
    const bob = await guest('chats-bob');
    await chat(alice, 'trip', 'Plan a trip');
    await chat(alice, 'secret', 'my secret plans');

    expect((await restList(alice)).map((c) => [c.chat_id, c.title, c.active])).toEqual([
      ['secret', 'my secret plans', false],
      ['trip', 'Plan a trip', false],
    ]);
    expect((await trpcAs(alice).agent.chats.list.query({})).chats.map((c) => c.chat_id)).toEqual(['secret', 'trip']);
    // Bob's agent has no chats; naming Alice's chat id renames nothing of hers.
    expect(await restList(bob)).toEqual([]);
    const bobRest = await restRename('trip', { title: 'mine now' }, bearer(bob));
    expect(bobRest.status).toBe(404);
    expect(await bobRest.json()).toMatchObject({ code: 'CHAT_NOT_FOUND' });
    const sneaky = { chat_id: 'trip', title: 'mine now', user_id: 'alice', agent: 'alice' } as unknown as { chat_id: string; title: string };
    expect(
      codeOf(
        await trpcAs(bob)
          .agent.chats.rename.mutate(sneaky)
          .catch((e: unknown) => e),
      ),
    ).toMatchObject({ code: 'CHAT_NOT_FOUND', httpStatus: 404 });
    expect((await restList(alice)).find((c) => c.chat_id === 'trip')?.title).toBe('Plan a trip');

    const renamed = await restRename('trip', { title: 'Lisbon in May' }, bearer(alice));
    expect(renamed.status).toBe(200);
    expect(await renamed.json()).toMatchObject({ chat_id: 'trip', title: 'Lisbon in May' });
    expect(await trpcAs(alice).agent.chats.rename.mutate({ chat_id: 'secret', title: 'Renamed over tRPC' })).toMatchObject({ title: 'Renamed over tRPC' });
    expect((await restList(alice)).map((c) => c.title)).toEqual(['Renamed over tRPC', 'Lisbon in May']);

    // Deleting a chat takes it off the list.
    const del = await fetch(`${api}/agent/chat/secret`, { method: 'DELETE', headers: bearer(alice) });
    expect(del.status).toBe(200);
    expect((await restList(alice)).map((c) => c.chat_id)).toEqual(['trip']);
  });

  it('relays the agent refusals: 400 for bad ids and titles, 404 for an unknown chat or a path that is no route', async () => {
    const pair = await guest('chats-hostile');
    await chat(pair, 'mine', 'hello');
    for (const id of ['a%20b', 'x'.repeat(129)]) {
      const res = await restRename(id, { title: 'x' }, bearer(pair));
      expect(res.status, id).toBe(400);
      expect(await res.json()).toMatchObject({ code: 'VALIDATION_FAILED' });
    }
    // An encoded slash or NUL is no spelling of a route segment: the proxy answers before any agent.
    for (const id of ['..%2F..%2Fhealth', '%00']) {
      const res = await restRename(id, { title: 'x' }, bearer(pair));
      expect(res.status, id).toBe(404);
      expect(await res.json()).toMatchObject({ code: 'ROUTE_NOT_FOUND' });
    }
    for (const title of ['x'.repeat(81), 'a\nb', 'a\u0000b', 'x\u202Eexe', '']) {
      const res = await restRename('mine', { title }, bearer(pair));
      expect(res.status, JSON.stringify(title)).toBe(400);
      expect(
        codeOf(
          await trpcAs(pair)
            .agent.chats.rename.mutate({ chat_id: 'mine', title })
            .catch((e: unknown) => e),
        ),
      ).toMatchObject({ code: 'VALIDATION_FAILED', httpStatus: 400 });
    }
    const unknown = await restRename('nope', { title: 'x' }, bearer(pair));
    expect(unknown.status).toBe(404);
    expect((await restList(pair)).map((c) => c.title)).toEqual(['hello']);
  });

  it('needs a valid access token: nothing reaches an agent without one', async () => {
    const pair = await guest('chats-auth');
    await chat(pair, 'kept', 'keep this title');
    for (const headers of [{}, { authorization: 'Bearer not.a.token' }, { authorization: `Bearer ${pair.refresh_token}` }] as Array<Record<string, string>>) {
      expect((await fetch(`${api}/agent/chats`, { headers })).status).toBe(401);
      expect((await restRename('kept', { title: 'x' }, headers)).status).toBe(401);
    }
    expect((await restList(pair)).map((c) => c.title)).toEqual(['keep this title']);
  });

  it("the agent's OpenAPI document, read through the proxy, lists both paths", async () => {
    const pair = await guest('chats-doc');
    const res = await fetch(`${api}/agent/openapi.json`, { headers: bearer(pair) });
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { paths: Record<string, Record<string, unknown>> };
    expect(Object.keys(doc.paths['/chats'] ?? {})).toEqual(['get']);
    expect(Object.keys(doc.paths['/chats/{chat_id}'] ?? {})).toEqual(['patch']);
  });
});
