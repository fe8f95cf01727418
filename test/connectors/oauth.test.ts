/**
 * A connector that needs a sign-in, end to end over HTTP: the account service finds the server's
 * authorization server from its 401 (RFC 9728, RFC 8414), registers itself (RFC 7591), and hands
 * back a one-time link; the "browser" (fetch, following redirects by hand and keeping the cookie)
 * opens it, is sent to the provider with PKCE, state and `resource`, comes back to the callback, and
 * lands on the Connectors page; the agent's tool call then answers with the server's view of the
 * token. The links are single use and tied to the browser that opened them; afterwards the token
 * is found in no process environment, no agent workspace and no file of the account's data
 * directory (it is stored sealed). A call is one request to the server; a token the server revokes
 * is refused at the next call.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountApi, bearer, uniqueEmail, type Pair } from '../support/account-api.js';
import { startOAuthMcpServer, type OAuthMcpServer } from '../support/mcp-oauth-server.js';
import { startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';
import { filesContaining, processesContaining } from '../support/secret-search.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';

/** A Set-Cookie header's attributes, lower-cased names (`httponly: ''` for a flag). */
const cookieAttributes = (header: string | null): Record<string, string> =>
  Object.fromEntries(
    (header ?? '')
      .split(';')
      .slice(1)
      .map((part) => {
        const [name = '', value = ''] = part.trim().split('=');
        return [name.toLowerCase(), value];
      }),
  );

describe('a connector behind OAuth: the browser sign-in, then the tool', () => {
  let server: OAuthMcpServer;
  let model: ScriptedModel;
  let account: TestAccount;
  let api: ReturnType<typeof accountApi>;
  let user: Pair;

  beforeAll(async () => {
    server = await startOAuthMcpServer();
    model = await startScriptedModel({
      responder: (request) =>
        request.messages.at(-1)?.role === 'tool'
          ? { text: `the tool said: ${String(request.messages.at(-1)?.content)}` }
          : { toolCalls: [{ name: 'secure__whoami', args: {} }] },
    });
    account = await startTestAccount('pglite', { AGENT_PROVISIONER: 'local', AGENT_IDLE_TIMEOUT: '0', MODEL: model.modelSpec, CONNECTORS_ALLOW_PRIVATE: '1' });
    api = accountApi(account);
    user = await api.email(uniqueEmail('oauth'));
  }, 120_000);
  afterAll(async () => {
    await account?.stop();
    await model?.close();
    await server?.close();
  });

  it('signs in through the browser redirects, refuses replays and other browsers, and the agent never holds the token', async () => {
    const answer = await api.post('/connectors', { name: 'secure', url: server.url }, bearer(user));
    const created = await api.json<{ id: string; status: string; authorize_url?: string }>(answer, 201);
    expect(created.status).toBe('needs_auth');
    expect(created.authorize_url).toMatch(new RegExp(`^${account.url}/api/v1/connectors/${created.id}/authorize\\?ticket=`));
    // The answer that hands out the link binds it to this browser: sent to the connectors' browser
    // steps only, out of scripts' reach, on the way back from the provider's site, for ten minutes; plain http: not Secure.
    const cookie = answer.headers.get('set-cookie')?.split(';')[0] ?? '';
    expect(cookie).toMatch(/^connector_sign_in=[\w-]{43}$/);
    const attributes = cookieAttributes(answer.headers.get('set-cookie'));
    expect(attributes).toMatchObject({ path: '/', httponly: '', samesite: 'Lax', 'max-age': '600' });
    expect(attributes).not.toHaveProperty('secure');

    // Someone the link was sent to cannot use it: not with no cookie, not with their own account's
    // (they would grant their own account at the provider to this user's connector). It stays usable.
    const stranger = await api.email(uniqueEmail('oauth-stranger'));
    const theirs = (await api.post('/connectors', { name: 'theirs', url: server.url }, bearer(stranger))).headers.get('set-cookie')?.split(';')[0] ?? '';
    expect(theirs).toMatch(/^connector_sign_in=/);
    expect(theirs).not.toBe(cookie);
    for (const headers of [{}, { cookie: theirs }] as Array<Record<string, string>>) {
      const refused = await fetch(created.authorize_url ?? '', { redirect: 'manual', headers });
      expect(refused.status).toBe(302);
      expect(new URL(refused.headers.get('location') ?? '').searchParams.get('error')).toMatch(/only in the browser of the account that added/);
    }

    // A second connector added in this browser (its cookie sent along, as the web client's
    // same-origin calls do) keeps the binding: the first link still works here.
    const second = await api.post('/connectors', { name: 'second', url: server.url }, { ...bearer(user), cookie });
    expect(second.headers.get('set-cookie')?.split(';')[0]).toBe(cookie);
    await api.json(second, 201);

    // This browser opens the link: on to the provider with PKCE S256, state and the resource.
    const opened = await fetch(created.authorize_url ?? '', { redirect: 'manual', headers: { cookie } });
    expect(opened.status).toBe(302);
    const toProvider = new URL(opened.headers.get('location') ?? '');
    expect(toProvider.origin).toBe(server.issuer);
    expect(toProvider.searchParams.get('code_challenge_method')).toBe('S256');
    expect(toProvider.searchParams.get('resource')).toBe(server.url);
    expect(toProvider.searchParams.get('redirect_uri')).toBe(`${account.url}/api/v1/connectors/callback`);
    // The link is used up.
    const again = await fetch(created.authorize_url ?? '', { redirect: 'manual', headers: { cookie } });
    expect(again.headers.get('location')).toContain('/connectors?error=');

    // The provider approves and sends the browser back with the code.
    const approved = await fetch(toProvider, { redirect: 'manual' });
    const callback = approved.headers.get('location') ?? '';
    expect(callback).toContain('/api/v1/connectors/callback?code=');
    // Another browser (no cookie, or another account's) cannot finish it; the one that started it can, once.
    for (const headers of [{}, { cookie: theirs }] as Array<Record<string, string>>)
      expect((await fetch(callback, { redirect: 'manual', headers })).headers.get('location')).toContain('error=');
    const finished = await fetch(callback, { redirect: 'manual', headers: { cookie } });
    expect(finished.headers.get('location')).toBe(`${account.url}/connectors?connector=${created.id}&status=connected`);
    const replay = await fetch(callback, { redirect: 'manual', headers: { cookie } });
    expect(replay.headers.get('location')).toContain('error=');

    const list = await api.json<{ connectors: Array<{ status: string; tools: Array<{ name: string }> }> }>(await api.get('/connectors', bearer(user)));
    expect(list.connectors[0]).toMatchObject({ status: 'connected', tools: [{ name: 'whoami' }] });

    // The agent calls the tool; the gateway's side adds the bearer, the server knows the client.
    const res = await api.post('/agent/chat', { message: 'who am I there?', chat_id: `c-${randomUUID()}` }, bearer(user));
    const stream = await res.text();
    expect(stream).toContain('"type":"tool_use"');
    expect(String(model.requests.at(-1)?.messages.at(-1)?.content)).toMatch(/signed in as client \S+/);

    const token = server.issued.at(-1) ?? '';
    expect(token.length).toBeGreaterThan(20);
    expect(await processesContaining(token)).toEqual([]);
    expect(await filesContaining(account.dataDir, token)).toEqual([]);
  });

  it('a call is one request to the server and nothing after it; a token the server revokes is refused at the next call', async () => {
    const ask = async () => {
      const res = await api.post('/agent/chat', { message: 'who am I there?', chat_id: `c-${randomUUID()}` }, bearer(user));
      await res.text();
      return String(model.requests.at(-1)?.messages.at(-1)?.content);
    };
    server.methods.length = 0;
    expect(await ask()).toMatch(/signed in as client \S+/);
    // The agent's request to the gateway closing after the answer is no cancellation of the finished call.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(server.methods).toEqual(['tools/call']);

    server.revoke(server.issued.at(-1) ?? '');
    expect(await ask()).toMatch(/needs its user to sign in again/);
    const list = await api.json<{ connectors: Array<{ name: string; status: string }> }>(await api.get('/connectors', bearer(user)));
    expect(list.connectors.find((c) => c.name === 'secure')?.status).toBe('needs_auth');
  });

  it('a provider that refuses sends the browser back to the page with the reason', async () => {
    const answer = await api.post('/connectors', { name: 'refused', url: server.url }, bearer(user));
    const created = await api.json<{ id: string; authorize_url?: string }>(answer, 201);
    const cookie = answer.headers.get('set-cookie')?.split(';')[0] ?? '';
    const opened = await fetch(created.authorize_url ?? '', { redirect: 'manual', headers: { cookie } });
    const state = new URL(opened.headers.get('location') ?? '').searchParams.get('state') ?? '';
    const back = await fetch(`${account.url}/api/v1/connectors/callback?error=access_denied&state=${encodeURIComponent(state)}`, {
      redirect: 'manual',
      headers: { cookie },
    });
    expect(back.headers.get('location')).toContain(`connector=${created.id}&error=access_denied`);
    const list = await api.json<{ connectors: Array<{ name: string; status: string }> }>(await api.get('/connectors', bearer(user)));
    expect(list.connectors.find((c) => c.name === 'refused')?.status).toBe('needs_auth');
  });
});

describe('a connector sign-in behind a path prefix (BASE_URL with a path), on https', () => {
  it("the sign-in cookie's Path is the prefix, and Secure", async () => {
    const server = await startOAuthMcpServer();
    const base = 'https://accounts.example.test/prefix';
    const account = await startTestAccount('pglite', { CONNECTORS_ALLOW_PRIVATE: '1', BASE_URL: base });
    try {
      const api = accountApi(account);
      const user = await api.email(uniqueEmail('prefix'));
      const answer = await api.post('/connectors', { name: 'prefixed', url: server.url }, bearer(user));
      const created = await api.json<{ id: string; authorize_url?: string }>(answer, 201);
      expect(cookieAttributes(answer.headers.get('set-cookie'))).toMatchObject({
        path: '/prefix/',
        httponly: '',
        secure: '',
        samesite: 'Lax',
        'max-age': '600',
      });
      const link = new URL(created.authorize_url ?? '');
      expect(link.href.startsWith(`${base}/api/v1/connectors/${created.id}/authorize?ticket=`)).toBe(true);
      // The proxy in front takes the prefix off: the link as it reaches the service.
      const cookie = answer.headers.get('set-cookie')?.split(';')[0] ?? '';
      const opened = await fetch(`${account.url}${link.pathname.slice('/prefix'.length)}${link.search}`, { redirect: 'manual', headers: { cookie } });
      expect(opened.status).toBe(302);
      expect(new URL(opened.headers.get('location') ?? '').searchParams.get('redirect_uri')).toBe(`${base}/api/v1/connectors/callback`);
    } finally {
      await account.stop();
      await server.close();
    }
  });
});
