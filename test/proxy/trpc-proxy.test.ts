/**
 * The account → agent proxy over tRPC (server/account/agents/proxy/router.ts), over real HTTP: each
 * user reaches only their own agent, chat streams event by event with tracked ids that resume
 * through the proxy, and expired or revoked tokens are refused before any agent is touched.
 */
import { TRPCClientError } from '@trpc/client';
import { decodeJwt, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccountClient, memoryTokenStorage } from '../../client/sdk/account.js';
import { bearerTrpcClient } from '../../server/account/agents/client.js';
import { admitAgentAction, restAgentAction } from '../../server/account/agents/proxy/guest-policy.js';
import type { AccountRouter } from '../../server/account/router.js';
import { AppError } from '../../server/common/errors.js';
import type { RateLimits } from '../../server/account/ratelimit/limits.js';
import { lastUserText, startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';
import type { TokenPair as Pair } from '@contracts/account/tokens.js';
import { testDeviceId } from '../support/devices.js';

let account: TestAccount;
let model: ScriptedModel;

beforeAll(async () => {
  model = await startScriptedModel({
    responder: (request) => {
      const text = lastUserText(request);
      if (text.startsWith('slow')) return { text: Array.from({ length: 6 }, (_, i) => `part${i} `), delayMs: 150 };
      return { text: `echo: ${text}` };
    },
  });
  account = await startTestAccount('pglite', { AGENT_PROVISIONER: 'local', AGENT_IDLE_TIMEOUT: '0', MODEL: model.modelSpec });
});
afterAll(async () => {
  await account?.stop();
  await model?.close();
});

const guest = async (deviceId: string): Promise<Pair> => {
  const res = await fetch(`${account.url}/api/v1/auth/guest`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ device_id: testDeviceId(deviceId) }),
  });
  return (await res.json()) as Pair;
};

/** A tRPC client of the account service that sends `token` on every call (subscriptions too). */
function clientFor(token: () => string) {
  return bearerTrpcClient<AccountRouter>(`${account.url}/trpc`, () => `Bearer ${token()}`);
}
type Client = ReturnType<typeof clientFor>;
type Item = { id?: string; data?: { type: string; content?: string }; type?: string; content?: string };

/** Collects a subscription until `done` (or `stopAfter` events), then unsubscribes; keepalives are left out (their timing depends on the machine). */
function collect(
  subscribe: (cb: { onData(v: unknown): void; onError(e: unknown): void; onComplete(): void }) => { unsubscribe(): void },
  stopAfter = Infinity,
): Promise<Item[]> {
  return new Promise((resolve, reject) => {
    const items: Item[] = [];
    const sub = subscribe({
      onData(value) {
        const item = value as Item;
        const type = item.data?.type ?? item.type;
        if (type === 'keepalive') return;
        items.push(item);
        if (type === 'done' || items.length >= stopAfter) {
          sub.unsubscribe();
          resolve(items);
        }
      },
      onError: (error) => {
        sub.unsubscribe();
        reject(error);
      },
      onComplete: () => resolve(items),
    });
  });
}
const eventOf = (item: Item) => item.data ?? item;
const textOf = (items: Item[]) =>
  items
    .map(eventOf)
    .filter((e) => e.type === 'text')
    .map((e) => e.content)
    .join('');

describe('tRPC proxy to the user own agent', () => {
  it('forwards health, chat (event by event, with tracked ids), history and delete', async () => {
    const pair = await guest('trpc-proxy-chat');
    const api: Client = clientFor(() => pair.access_token);
    expect(await api.agent.health.query()).toMatchObject({ status: 'ok' });

    const items = await collect((cb) => api.agent.chat.send.subscribe({ message: 'hello', chat_id: 'c1' }, cb));
    expect(textOf(items)).toBe('echo: hello');
    expect(eventOf(items.at(-1) as Item)).toMatchObject({ type: 'done' });
    // Tracked ids survive the hop, so a reconnect can resume.
    expect(items.filter((i) => i.data?.type === 'text').every((i) => typeof i.id === 'string' && i.id.length > 0)).toBe(true);

    const history = await api.agent.chat.history.query({ chat_id: 'c1' });
    expect(history.messages).toEqual([
      { type: 'text', content: 'hello', name: 'user', message_id: expect.any(String) },
      { type: 'text', content: 'echo: hello' },
    ]);
    expect(await api.agent.chat.active.query({ chat_id: 'c1' })).toEqual({ active: false, user_message: '' });
    expect(await api.agent.chat.delete.mutate({ chat_id: 'c1' })).toEqual({ status: 'ok', deleted: 2 });
    expect((await api.agent.chat.history.query({ chat_id: 'c1' })).messages).toEqual([]);
  });

  it('resumes a running reply through the proxy: active → stream, and lastEventId', async () => {
    const pair = await guest('trpc-proxy-resume');
    const api = clientFor(() => pair.access_token);
    // Leave after two events, as a reloading page would.
    const first = await collect((cb) => api.agent.chat.send.subscribe({ message: 'slow please', chat_id: 'r1' }, cb), 2);
    expect(await api.agent.chat.active.query({ chat_id: 'r1' })).toEqual({ active: true, user_message: 'slow please' });

    // From the start: stream_meta, the buffer, live events, done.
    const replay = await collect((cb) => api.agent.chat.stream.subscribe({ chat_id: 'r1' }, cb));
    expect(eventOf(replay[0] as Item)).toMatchObject({ type: 'stream_meta', user_message: 'slow please' });
    expect(textOf(replay)).toBe('part0 part1 part2 part3 part4 part5 ');

    // From the last id seen: only what came after it (this works for a grace period after the end).
    const last = first.at(-1)?.id as string;
    const rest = await collect((cb) => api.agent.chat.stream.subscribe({ chat_id: 'r1', lastEventId: last }, cb));
    expect(eventOf(rest[0] as Item).type).not.toBe('stream_meta');
    expect(textOf(first) + textOf(rest)).toBe('part0 part1 part2 part3 part4 part5 ');
  });

  it('keeps every user in their own agent', async () => {
    const alice = await guest('trpc-proxy-alice');
    const bob = await guest('trpc-proxy-bob');
    const asAlice = clientFor(() => alice.access_token);
    const asBob = clientFor(() => bob.access_token);
    await collect((cb) => asAlice.agent.chat.send.subscribe({ message: 'alice secret plan', chat_id: 'shared-id' }, cb));
    const form = new FormData();
    form.set('file', new Blob(['for alice only']), 'alice-only.txt');
    expect(
      (await fetch(`${account.url}/api/v1/agent/files/upload`, { method: 'POST', headers: { authorization: `Bearer ${alice.access_token}` }, body: form }))
        .status,
    ).toBe(200);

    // Same chat id, same procedure: Bob sees his own (empty) chat, his own tree.
    expect((await asBob.agent.chat.history.query({ chat_id: 'shared-id' })).messages).toEqual([]);
    expect(JSON.stringify(await asBob.agent.files.tree.query({}))).not.toContain('alice-only.txt');
    expect(JSON.stringify(await asAlice.agent.files.tree.query({}))).toContain('alice-only.txt');
    const bobStream = await collect((cb) => asBob.agent.chat.stream.subscribe({ chat_id: 'shared-id' }, cb));
    expect(bobStream.map(eventOf)).toEqual([{ type: 'done' }]);
    // Deleting Bob's chat of that id leaves Alice's alone.
    expect(await asBob.agent.chat.delete.mutate({ chat_id: 'shared-id' })).toEqual({ status: 'ok', deleted: 0 });
    expect((await asAlice.agent.chat.history.query({ chat_id: 'shared-id' })).messages).toHaveLength(2);
    // Inputs cannot name an agent: unknown keys are not a way in.
    const alicePlusBob = { chat_id: 'shared-id', user_id: 'bob', agent: 'bob' } as unknown as { chat_id: string };
    expect((await asBob.agent.chat.history.query(alicePlusBob)).messages).toEqual([]);
  });

  it('refuses missing, expired and revoked tokens, for queries and subscriptions alike', async () => {
    const pair = await guest('trpc-proxy-expiry');
    const { keys } = account.services.tokens.issuer;
    const past = Math.floor(Date.now() / 1000) - 3600;
    const expired = await new SignJWT({ ...decodeJwt(pair.access_token), iat: past - 900, exp: past })
      .setProtectedHeader({ alg: 'EdDSA', kid: keys.kid })
      .sign(keys.privateKey);
    const stale = clientFor(() => expired);
    const code = (error: unknown) => (error instanceof TRPCClientError ? (error.data as { code?: string }).code : String(error));

    expect(code(await stale.agent.files.tree.query({}).catch((e: unknown) => e))).toBe('TOKEN_EXPIRED');
    expect(code(await collect((cb) => stale.agent.chat.send.subscribe({ message: 'hi', chat_id: 'x' }, cb)).catch((e: unknown) => e))).toBe('TOKEN_EXPIRED');
    const garbage = await clientFor(() => 'not-a-token')
      .agent.health.query()
      .catch((e: unknown) => e);
    expect((garbage as TRPCClientError<AccountRouter>).data?.httpStatus).toBe(401);

    // The SDK refreshes silently on TOKEN_EXPIRED and the call goes through.
    const storage = memoryTokenStorage({ access_token: expired, refresh_token: pair.refresh_token, access_expires_at: Date.now() + 600_000 });
    const sdk = createAccountClient({ url: account.url, storage });
    expect(await sdk.trpc.agent.health.query()).toMatchObject({ status: 'ok' });
    const renewed = await storage.get();
    expect(renewed?.access_token).not.toBe(expired);

    // After logout-all, the still-unexpired access token no longer reaches the agent.
    const live = renewed?.access_token as string;
    await sdk.logoutAll();
    const revoked = await clientFor(() => live)
      .agent.health.query()
      .catch((e: unknown) => e);
    expect(revoked).toBeInstanceOf(TRPCClientError);
    expect((revoked as TRPCClientError<AccountRouter>).data?.httpStatus).toBe(401);
  });
});

describe('subagents, pending and messenger through the tRPC proxy', () => {
  it('forwards them, and refuses the messenger to guests', async () => {
    const pair = await guest('trpc-areas');
    const client = clientFor(() => pair.access_token);
    expect(await client.agent.subagents.list.query()).toEqual({ subagents: [] });
    await expect(client.agent.subagents.get.query({ run_id: 'no-such-run' })).rejects.toMatchObject({ data: { code: 'SUBAGENT_NOT_FOUND' } });
    expect(await client.agent.pending.collect.mutate()).toEqual({ messages: [] });
    await expect(client.agent.messenger.status.query()).rejects.toMatchObject({ data: { code: 'GUEST_LIMITED' } });

    const me = decodeJwt(pair.access_token).sub as string;
    await account.services.store.db.user.update({ where: { id: me }, data: { tier: 'full' } });
    const full = await guest('trpc-areas');
    const fullClient = clientFor(() => full.access_token);
    expect(await fullClient.agent.messenger.status.query()).toEqual({ connected: false, bot_username: '', bot_name: '' });
    expect(await fullClient.agent.messenger.contacts.query({})).toEqual({ contacts: [] });
    await expect(fullClient.agent.messenger.deleteContact.mutate({ telegram_id: '12345' })).rejects.toMatchObject({ data: { code: 'CONTACT_NOT_FOUND' } });
  });
});

describe('guest policy, shared by the REST and tRPC faces', () => {
  const counted: string[] = [];
  const limits = {
    consume: async (name: string, key: string) => {
      counted.push(`${name}:${key}`);
      if (key === 'exhausted') throw new AppError(429, 'RATE_LIMITED', 'slow down', { 'Retry-After': '60' });
    },
  } as unknown as RateLimits;

  it('names REST calls by action', () => {
    expect(restAgentAction({ method: 'POST', path: '/chat' })).toBe('chat.message');
    expect(restAgentAction({ method: 'GET', path: '/telegram/contacts' })).toBe('messenger');
    expect(restAgentAction({ method: 'GET', path: '/messenger/status' })).toBe('messenger');
    expect(restAgentAction({ method: 'GET', path: '/chat/{chat_id}/stream' })).toBe('other');
  });

  it('limits guests only: messenger refused, messages counted, quota as GUEST_QUOTA with Retry-After', async () => {
    await expect(admitAgentAction('messenger', { guest: true, userId: 'g' }, limits)).rejects.toMatchObject({ status: 403, appCode: 'GUEST_LIMITED' });
    expect(await admitAgentAction('messenger', { guest: false, userId: 'f' }, limits)).toMatchObject({ maxBodyBytes: 51 * 1024 * 1024 });
    await admitAgentAction('chat.message', { guest: true, userId: 'g' }, limits);
    await admitAgentAction('other', { guest: true, userId: 'g' }, limits);
    await admitAgentAction('chat.message', { guest: false, userId: 'f' }, limits);
    expect(counted).toEqual(['guest.chat.daily:g']);
    await expect(admitAgentAction('chat.message', { guest: true, userId: 'exhausted' }, limits)).rejects.toMatchObject({
      status: 429,
      appCode: 'GUEST_QUOTA',
      headers: { 'Retry-After': '60' },
    });
  });
});

// Last in this file: it puts the shared account service into its stopping state.
describe('a stopping account service (SIGTERM)', () => {
  it('ends a relayed chat subscription with `reconnect` and no `done`, after tracked events to resume from; the run goes on', async () => {
    const pair = await guest('trpc-proxy-shutdown');
    const api = clientFor(() => pair.access_token);
    let shutdownBegun = false;
    const items = await new Promise<Item[]>((resolve, reject) => {
      const seen: Item[] = [];
      const sub = api.agent.chat.send.subscribe(
        { message: 'slow please', chat_id: 's1' },
        {
          onData(value) {
            seen.push(value as Item);
            if (!shutdownBegun && eventOf(value as Item).type === 'text') {
              shutdownBegun = true;
              account.services.beginShutdown();
            }
          },
          onError: (error) => {
            sub.unsubscribe();
            reject(error);
          },
          onComplete: () => resolve(seen),
        },
      );
    });
    expect(eventOf(items.at(-1) as Item)).toEqual({ type: 'reconnect' });
    expect(items.some((item) => eventOf(item).type === 'done')).toBe(false);
    expect(textOf(items)).not.toBe('part0 part1 part2 part3 part4 part5 ');
    // What the client resumes from elsewhere (this instance now ends new streams the same way).
    expect(items.some((item) => item.id)).toBe(true);
    // The run went on on the agent: its history ends whole once it is done.
    for (const deadline = Date.now() + 10_000; (await api.agent.chat.active.query({ chat_id: 's1' })).active && Date.now() < deadline; ) {
      await new Promise((r) => setTimeout(r, 100));
    }
    const history = await api.agent.chat.history.query({ chat_id: 's1' });
    expect(history.messages.at(-1)).toEqual({ type: 'text', content: 'part0 part1 part2 part3 part4 part5 ' });
  });
});
