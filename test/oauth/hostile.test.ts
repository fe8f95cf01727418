/**
 * Hostile and broken inputs on the browser OAuth flow and the code exchange: state missing,
 * forged, replayed, of another browser or provider, or expired; code replay, concurrent
 * exchanges, exchange after 60 s; providers that deny, fail, answer garbage, hang, go away, or
 * issue ID tokens with the wrong audience, issuer, nonce, expiry, signature or algorithm.
 * Every callback answer is a redirect to the web client, and nothing is half-created.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exchangeAuthCode, issueAuthCode } from '../../server/account/auth/oauth/codes.js';
import { consumeOAuthState, createOAuthState, sha256 } from '../../server/account/auth/oauth/state.js';
import { TestBrowser } from '../support/browser.js';
import { signInThroughBrowser, startOAuthStack, throughProvider, WEB_CLIENT, type OAuthStack } from '../support/oauth-stack.js';
import { startRogueOidc, type RogueOidc } from '../support/rogue-oidc.js';
import { freePort, startTestAccount, type TestAccount } from '../support/servers.js';

const landingOf = (location: string | undefined) => {
  const url = new URL(location ?? 'http://invalid/');
  return { path: url.pathname, code: url.searchParams.get('code'), error: url.searchParams.get('error') };
};

describe('hostile callbacks and exchanges against the real providers', () => {
  let stack: OAuthStack;
  const db = () => stack.account.services.store.db;
  /** `cookie`: the exchange cookie of the browser that finished the flow. */
  const exchange = (code: unknown, cookie = '') =>
    fetch(`${stack.api}/auth/exchange`, { method: 'POST', headers: { 'content-type': 'application/json', cookie }, body: JSON.stringify({ code }) });
  /** Start in `browser` and go through the provider, stopping just before our callback. */
  const upToCallback = async (provider: 'idpa' | 'idpb', browser = new TestBrowser(), login = 'alice') =>
    (await throughProvider(browser, provider, `${stack.api}/auth/oauth/${provider}`, { login, stopAtCallback: true })).location as string;

  beforeAll(async () => {
    stack = await startOAuthStack();
  });
  afterAll(() => stack?.stop());

  it.each([
    ['no state at all', '?code=abc'],
    ['an unknown state', `?code=abc&state=${randomBytes(32).toString('base64url')}`],
    ['a repeated state parameter', '?code=abc&state=a&state=b'],
    ['an absurdly long state', `?code=abc&state=${'x'.repeat(5000)}`],
    ['only an error', '?error=access_denied'],
  ])('callback with %s → redirect with error=invalid_state', async (_name, query) => {
    for (const provider of ['idpa', 'idpb']) {
      const res = await fetch(`${stack.api}/auth/oauth/${provider}/callback${query}`, { redirect: 'manual' });
      expect(res.status).toBe(302);
      expect(landingOf(res.headers.get('location') ?? undefined)).toEqual({ path: '/auth/callback', code: null, error: 'invalid_state' });
    }
  });

  it('a callback replayed in the same browser → invalid_state; the provider code is redeemed once', async () => {
    const browser = new TestBrowser();
    const callback = await upToCallback('idpb', browser);
    const before = stack.b.tokenRequests;
    const first = await browser.request(callback);
    expect(landingOf(first.location).code).toEqual(expect.any(String));
    // The binding cookie was cleared by the first answer; put it back to show the state itself is spent.
    const second = await new TestBrowser().request(callback, { headers: { cookie: `oauth_idpb=${'x'.repeat(43)}` } });
    expect(landingOf(second.location)).toMatchObject({ code: null, error: 'invalid_state' });
    expect(stack.b.tokenRequests).toBe(before + 1);
  });

  it('of 5 concurrent replays of one callback exactly one gets a code', async () => {
    const browser = new TestBrowser();
    const callback = await upToCallback('idpa', browser);
    const cookie = `oauth_idpa=${browser.cookies.get('oauth_idpa')?.value}`;
    const answers = await Promise.all(Array.from({ length: 5 }, () => fetch(callback, { redirect: 'manual', headers: { cookie } })));
    const landings = answers.map((r) => landingOf(r.headers.get('location') ?? undefined));
    expect(answers.every((r) => r.status === 302)).toBe(true);
    expect(landings.filter((l) => l.code).length).toBe(1);
    expect(landings.filter((l) => l.error === 'invalid_state').length).toBe(4);
  });

  it('login CSRF: a callback opened in another browser (no binding cookie) → invalid_state, no account', async () => {
    const users = await db().user.count();
    const attackerCallback = await upToCallback('idpa', new TestBrowser(), 'mallory');
    const victim = new TestBrowser();
    const res = await victim.request(attackerCallback);
    expect(landingOf(res.location)).toMatchObject({ code: null, error: 'invalid_state' });
    expect(await db().user.count()).toBe(users);
  });

  it('a binding cookie of another flow, or a state of the other provider → invalid_state', async () => {
    const browser = new TestBrowser();
    const callback = await upToCallback('idpb', browser);
    const res = await new TestBrowser().request(callback, { headers: { cookie: `oauth_idpb=${randomBytes(32).toString('base64url')}` } });
    expect(landingOf(res.location).error).toBe('invalid_state');

    const browser2 = new TestBrowser();
    const callbackB = new URL(await upToCallback('idpb', browser2));
    const crossed = `${stack.api}/auth/oauth/idpa/callback${callbackB.search}`;
    const value = browser2.cookies.get('oauth_idpb')?.value;
    const res2 = await new TestBrowser().request(crossed, { headers: { cookie: `oauth_idpa=${value}` } });
    expect(landingOf(res2.location).error).toBe('invalid_state');
  });

  it('state and binding are stored hashed; an expired state is refused', async () => {
    const now = new Date();
    const started = await createOAuthState(db(), { provider: 'idpa', linkUserId: undefined, now });
    const row = await db().oAuthState.findUniqueOrThrow({ where: { stateHash: sha256(started.state) } });
    expect(JSON.stringify(row)).not.toContain(started.state);
    expect(JSON.stringify(row)).not.toContain(started.browserSecret);
    const later = new Date(now.getTime() + 601_000);
    await expect(consumeOAuthState(db(), { provider: 'idpa', state: started.state, browserSecret: started.browserSecret, now: later })).rejects.toMatchObject({
      code: 'invalid_state',
      reason: 'expired state',
    });
    const fresh = await createOAuthState(db(), { provider: 'idpa', linkUserId: undefined, now });
    await expect(
      consumeOAuthState(db(), { provider: 'idpa', state: fresh.state, browserSecret: fresh.browserSecret, now: new Date(now.getTime() + 599_000) }),
    ).resolves.toMatchObject({ nonce: fresh.nonce });
  });

  it('an auth code works once: replay → 401 INVALID_AUTH_CODE', async () => {
    const { code, cookie } = await signInThroughBrowser(stack, 'idpa', { login: 'kim' });
    expect((await exchange(code, cookie)).status).toBe(200);
    const replay = await exchange(code, cookie);
    expect(replay.status).toBe(401);
    expect(await replay.json()).toEqual({ detail: expect.any(String), code: 'INVALID_AUTH_CODE' });
  });

  it('of 10 concurrent exchanges of one code exactly one gets a token pair', async () => {
    const { code, cookie } = await signInThroughBrowser(stack, 'idpb', { login: 'lou' });
    const statuses = (await Promise.all(Array.from({ length: 10 }, () => exchange(code, cookie)))).map((r) => r.status).sort();
    expect(statuses).toEqual([200, ...Array(9).fill(401)]);
  });

  it('an auth code is stored hashed and dies after 60 s', async () => {
    const { code, cookie } = await signInThroughBrowser(stack, 'idpa', { login: 'max' });
    const row = await db().authCode.findUniqueOrThrow({ where: { codeHash: sha256(code as string) } });
    expect(row.expiresAt.getTime() - row.createdAt.getTime()).toBeGreaterThan(59_000);
    expect(row.expiresAt.getTime() - row.createdAt.getTime()).toBeLessThanOrEqual(60_500);
    // Time travel: the code was issued 61 s ago.
    await db().authCode.update({ where: { codeHash: row.codeHash }, data: { expiresAt: new Date(Date.now() - 1_000) } });
    const res = await exchange(code, cookie);
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ code: 'INVALID_AUTH_CODE' });

    // The same rule with an injected clock: valid at 59.9 s, dead at 60 s.
    const t0 = new Date('2030-01-01T00:00:00Z');
    const user = await db().user.create({ data: {} });
    const c1 = await issueAuthCode(db(), { userId: user.id, provider: 'idpa', now: t0, ttlSeconds: 60 });
    await expect(exchangeAuthCode(db(), { ...c1, now: new Date(t0.getTime() + 60_000) })).rejects.toMatchObject({ appCode: 'INVALID_AUTH_CODE' });
    const c2 = await issueAuthCode(db(), { userId: user.id, provider: 'idpa', now: t0, ttlSeconds: 60 });
    await expect(exchangeAuthCode(db(), { ...c2, now: new Date(t0.getTime() + 59_900) })).resolves.toMatchObject({ userId: user.id });
  });

  it.each([
    [{ code: '' }, 400],
    [{ code: 'x'.repeat(257) }, 400],
    [{ code: 'not-a-code' }, 401],
    [{}, 400],
    [{ code: 42 }, 400],
  ])('exchange %j → %i', async (body, status) => {
    const res = await fetch(`${stack.api}/auth/exchange`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect(res.status).toBe(status);
    expect(await res.json()).toMatchObject({ code: expect.any(String), detail: expect.any(String) });
  });

  it.each(['token-error', 'token-garbage', 'user-500', 'user-garbage', 'slow'] as const)(
    'provider B misbehaving (%s) → ?error=provider_error, nothing created',
    async (misbehave) => {
      const users = await db().user.count();
      const identities = await db().identity.count();
      stack.b.misbehave = misbehave;
      try {
        const { code, error } = await signInThroughBrowser(stack, 'idpb', { login: `nobody-${misbehave}` });
        expect({ code, error }).toEqual({ code: null, error: 'provider_error' });
      } finally {
        stack.b.misbehave = undefined;
      }
      expect(await db().user.count()).toBe(users);
      expect(await db().identity.count()).toBe(identities);
    },
  );

  it('a provider error other than a denial → ?error=provider_error', async () => {
    const browser = new TestBrowser();
    const callback = new URL(await upToCallback('idpb', browser));
    callback.searchParams.delete('code');
    callback.searchParams.set('error', 'server_error');
    const res = await browser.request(callback.href);
    expect(landingOf(res.location)).toMatchObject({ code: null, error: 'provider_error' });
  });
});

describe('a rogue or broken provider A', () => {
  let rogue: RogueOidc;
  let account: TestAccount;
  let api: string;
  const db = () => account.services.store.db;

  beforeAll(async () => {
    rogue = await startRogueOidc();
    const port = await freePort();
    account = await startTestAccount('pglite', {
      PORT: String(port),
      IDPA_ISSUER: rogue.issuer,
      IDPA_CLIENT_ID: WEB_CLIENT.clientId,
      IDPA_CLIENT_SECRET: WEB_CLIENT.clientSecret,
      IDPB_CLIENT_ID: 'b',
      IDPB_CLIENT_SECRET: 'b',
      IDPB_TOKEN_URL: `http://127.0.0.1:${await freePort()}/token`, // nobody listens
      OAUTH_PROVIDER_TIMEOUT_SECONDS: '2',
    });
    api = `${account.url}/api/v1`;
  });
  afterAll(async () => {
    await account?.stop();
    await rogue?.close();
  });

  /** Start a flow, let the rogue token endpoint answer with `idToken(nonce)`, and call our callback. */
  const callbackWith = async (idToken: (nonce: string) => Promise<unknown> | unknown) => {
    const browser = new TestBrowser();
    const start = await browser.request(`${api}/auth/oauth/idpa`);
    const authorize = new URL(start.location as string);
    const nonce = authorize.searchParams.get('nonce') as string;
    rogue.answer = async () => ({ body: { access_token: 'at', token_type: 'Bearer', expires_in: 60, ...((await idToken(nonce)) as object) } });
    const res = await browser.request(`${api}/auth/oauth/idpa/callback?code=c0de&state=${authorize.searchParams.get('state')}`);
    expect(res.status).toBe(302);
    return landingOf(res.location);
  };
  const now = () => Math.floor(Date.now() / 1000);
  const claims = (nonce: string, extra: Record<string, unknown> = {}) => ({
    iss: rogue.issuer,
    aud: WEB_CLIENT.clientId,
    sub: 'rogue-user',
    nonce,
    iat: now(),
    exp: now() + 300,
    ...extra,
  });

  it('accepts a correct ID token (the harness itself works)', async () => {
    expect(await callbackWith(async (nonce) => ({ id_token: await rogue.sign(claims(nonce)) }))).toMatchObject({ code: expect.any(String), error: null });
  });

  it.each([
    ['wrong audience', (n: string) => rogue.sign(claims(n, { aud: 'someone-else' }))],
    ['wrong issuer', (n: string) => rogue.sign(claims(n, { iss: 'https://evil.example' }))],
    ['expired', (n: string) => rogue.sign(claims(n, { iat: now() - 3600, exp: now() - 600 }))],
    ['wrong nonce', (n: string) => rogue.sign(claims(`${n}x`))],
    ['no nonce', (n: string) => rogue.sign(claims(n, { nonce: undefined }))],
    [
      'a foreign key under the provider kid',
      async (n: string) => {
        const { generateKeyPair } = await import('jose');
        return rogue.sign(claims(n), { key: (await generateKeyPair('RS256')).privateKey });
      },
    ],
    [
      'alg none',
      (n: string) => {
        const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
        return `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims(n))}.`;
      },
    ],
    ['HS256 keyed with the client secret', (n: string) => rogue.sign(claims(n), { alg: 'HS256', key: new TextEncoder().encode(WEB_CLIENT.clientSecret) })],
    [
      'a tampered payload',
      async (n: string) => {
        const [h, , s] = (await rogue.sign(claims(n))).split('.');
        return `${h}.${Buffer.from(JSON.stringify(claims(n, { sub: 'admin' }))).toString('base64url')}.${s}`;
      },
    ],
  ])('an ID token with %s → ?error=provider_error, nothing created', async (_name, make) => {
    const users = await db().user.count();
    expect(await callbackWith(async (nonce) => ({ id_token: await make(nonce) }))).toEqual({ path: '/auth/callback', code: null, error: 'provider_error' });
    expect(await db().user.count()).toBe(users);
  });

  it('a token answer without an ID token, or garbage instead of JSON → ?error=provider_error', async () => {
    expect((await callbackWith(() => ({}))).error).toBe('provider_error');
    const browser = new TestBrowser();
    const start = await browser.request(`${api}/auth/oauth/idpa`);
    rogue.answer = () => ({ contentType: 'text/html', body: '<html>502 Bad Gateway</html>' });
    const res = await browser.request(`${api}/auth/oauth/idpa/callback?code=c&state=${new URL(start.location as string).searchParams.get('state')}`);
    expect(landingOf(res.location).error).toBe('provider_error');
  });

  it('provider B unreachable at its token endpoint → ?error=provider_error', async () => {
    const browser = new TestBrowser();
    const start = await browser.request(`${api}/auth/oauth/idpb`);
    expect(start.status).toBe(302);
    const res = await browser.request(`${api}/auth/oauth/idpb/callback?code=c&state=${new URL(start.location as string).searchParams.get('state')}`);
    expect(landingOf(res.location)).toMatchObject({ code: null, error: 'provider_error' });
  });

  it('provider A going away between start and callback → ?error=provider_error', async () => {
    const browser = new TestBrowser();
    const start = await browser.request(`${api}/auth/oauth/idpa`);
    const state = new URL(start.location as string).searchParams.get('state');
    await rogue.close();
    const res = await browser.request(`${api}/auth/oauth/idpa/callback?code=c&state=${state}`);
    expect(landingOf(res.location)).toMatchObject({ code: null, error: 'provider_error' });
  });
});

describe('provider A down or answering garbage at discovery', () => {
  it('start → 502 PROVIDER_UNAVAILABLE (JSON, no stack), and it recovers once the provider is back', async () => {
    const rogue = await startRogueOidc();
    rogue.discovery = { contentType: 'text/html', body: '<html>maintenance</html>' };
    const account = await startTestAccount('pglite', {
      IDPA_ISSUER: rogue.issuer,
      IDPA_CLIENT_ID: 'x',
      IDPA_CLIENT_SECRET: 'y',
      IDPA_MOBILE_CLIENT_IDS: 'app',
    });
    try {
      const api = `${account.url}/api/v1`;
      const res = await fetch(`${api}/auth/oauth/idpa`, { redirect: 'manual' });
      expect(res.status).toBe(502);
      expect(await res.json()).toEqual({ detail: expect.any(String), code: 'PROVIDER_UNAVAILABLE' });
      const mobile = await fetch(`${api}/auth/mobile/idpa`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id_token: 'a.b.c' }),
      });
      expect(mobile.status).toBe(502);
      rogue.discovery = undefined;
      expect((await fetch(`${api}/auth/oauth/idpa`, { redirect: 'manual' })).status).toBe(302);
    } finally {
      await account.stop();
      await rogue.close();
    }
  });
});
