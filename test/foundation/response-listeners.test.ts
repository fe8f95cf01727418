/**
 * No response collects 'close' listeners (issue 42: `MaxListenersExceededWarning: 11 close
 * listeners added to [ServerResponse]` in the service's log). Each answer of both services, in
 * this process, is watched from the first listener added to it: the shell adds a few (access log
 * and metrics, connection tracking, the request's abort signal, a body's deadline), a route one
 * or two more; one added per event, per chunk or per retry would grow with the stream and pass
 * MAX_CLOSE_LISTENERS here. Driven through ordinary use: sign-in, refresh, /auth/me, chat
 * streams over REST and tRPC through the account proxy (and a cut one resumed by last event id),
 * uploads, downloads (whole and ranged, the agent's own and through the proxy).
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenPair as Pair } from '@contracts/account/tokens.js';
import { bearerTrpcClient, subscriptionIterable } from '../../server/account/agents/client.js';
import type { AccountRouter } from '../../server/account/router.js';
import { testDeviceId } from '../support/devices.js';
import { startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';
import { startTestAccount, startTestAgent, type TestAccount, type TestAgent } from '../support/servers.js';
import { openSse, readFrames } from '../support/sse.js';

/**
 * The shell's own (up to four) and a route's. The most today: a chat stream relayed by the REST
 * proxy (access log and metrics, body deadline, connection tracking; the relay, its pipe, its
 * shutdown hook). Before the fix a download reached 11 (stream.pipeline adds seven).
 */
const MAX_CLOSE_LISTENERS = 6;

type Emitter = http.ServerResponse & { req?: http.IncomingMessage };
type AddListener = (this: Emitter, event: string | symbol, listener: (...args: never[]) => void) => Emitter;
const watched = ['on', 'addListener', 'prependListener'] as const;
const prototype = http.ServerResponse.prototype as unknown as Record<(typeof watched)[number], AddListener>;
const originals = Object.fromEntries(watched.map((name) => [name, prototype[name]])) as Record<(typeof watched)[number], AddListener>;
/** The most 'close' listeners one response held at once, with the request and where the last one came from. */
let peak = { count: 0, request: '', addedAt: '' };

function watchCloseListeners(): void {
  for (const name of watched) {
    const original = originals[name];
    // `once` and `prependOnceListener` add through `on` and `prependListener`.
    prototype[name] = function (this: Emitter, event, listener) {
      const result = original.call(this, event, listener);
      const count = event === 'close' ? this.listenerCount('close') : 0;
      if (count > peak.count) peak = { count, request: `${this.req?.method} ${this.req?.url}`, addedAt: new Error().stack ?? '' };
      return result;
    };
  }
}

let model: ScriptedModel;
let agent: TestAgent;
let account: TestAccount;
let api: string;
let pair: Pair;
const bearer = () => ({ authorization: `Bearer ${pair.access_token}` });

beforeAll(async () => {
  watchCloseListeners();
  // Forty chunks a reply: a listener per event would show at once.
  model = await startScriptedModel({ responder: () => ({ text: Array.from({ length: 40 }, (_, i) => `word${i} `), delayMs: 2 }) });
  agent = await startTestAgent({ MODEL: model.modelSpec });
  account = await startTestAccount('pglite', { AGENT_PROVISIONER: 'static' });
  api = `${account.url}/api/v1`;
  const signedIn = await fetch(`${api}/auth/guest`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ device_id: testDeviceId('close-listeners') }),
  });
  pair = (await signedIn.json()) as Pair;
  const me = (await (await fetch(`${api}/auth/me`, { headers: bearer() })).json()) as { user_id: string };
  await account.services.agents.registry.add({ name: 'listeners', url: agent.url, secret: agent.secret, kind: 'static', userId: me.user_id });
});
afterAll(async () => {
  for (const name of watched) prototype[name] = originals[name];
  await account?.stop();
  await agent?.stop();
  await model?.close();
});

describe(`a response holds at most ${MAX_CLOSE_LISTENERS} 'close' listeners`, () => {
  it('through sign-in, chat streams over REST and tRPC (one cut and resumed), uploads and downloads', async () => {
    const refreshed = await fetch(`${api}/auth/refresh`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ refresh_token: pair.refresh_token }),
    });
    expect(refreshed.status).toBe(200);
    pair = (await refreshed.json()) as Pair;

    // REST chat through the proxy, read to the end; then one cut after a few events and resumed.
    const chat = (chatId: string) =>
      openSse(`${api}/agent/chat`, {
        method: 'POST',
        headers: { ...bearer(), 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'hello', chat_id: chatId }),
      });
    const whole = await readFrames(await chat('whole'));
    expect(whole.filter((f) => f.data.type === 'text')).toHaveLength(40);
    const cut = await chat('cut');
    const firstPart = await readFrames(cut, (_, all) => all.length === 5);
    cut.close();
    const resumed = await openSse(`${api}/agent/chat/cut/stream`, { headers: { ...bearer(), 'last-event-id': firstPart.at(-1)?.id ?? '' } });
    expect((await readFrames(resumed)).at(-1)?.data.type).toBe('done');

    // tRPC chat through the proxy.
    const trpc = bearerTrpcClient<AccountRouter>(`${account.url}/trpc`, () => `Bearer ${pair.access_token}`);
    const items: unknown[] = [];
    for await (const item of subscriptionIterable((callbacks) => trpc.agent.chat.send.subscribe({ message: 'again', chat_id: 'trpc' }, callbacks))) {
      items.push(item);
      if ((item as { data?: { type?: string } }).data?.type === 'done') break;
    }
    expect(items.length).toBeGreaterThan(40);

    // Files: upload through the proxy, then download whole and ranged, through it and from the agent.
    const content = 'x'.repeat(256 * 1024);
    const form = new FormData();
    form.set('file', new Blob([content]), 'big.txt');
    expect((await fetch(`${api}/agent/files/upload`, { method: 'POST', headers: bearer(), body: form })).status).toBe(200);
    for (const [base, auth] of [
      [`${api}/agent`, bearer()],
      [agent.url, agent.auth],
    ] as const) {
      expect(await (await fetch(`${base}/files/uploads/big.txt`, { headers: auth })).text()).toBe(content);
      expect((await fetch(`${base}/files/uploads/big.txt`, { headers: { ...auth, range: 'bytes=0-9' } })).status).toBe(206);
    }

    expect(peak.count, `${peak.request} had ${peak.count} 'close' listeners; the last added at\n${peak.addedAt}`).toBeLessThanOrEqual(MAX_CLOSE_LISTENERS);
  });
});
