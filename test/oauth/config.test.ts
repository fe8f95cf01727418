/**
 * Configuration of the providers, and what the endpoints say when it is missing (503 naming
 * the settings), rate limits, and the OpenAPI entries.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAccountConfig } from '../../server/account/config.js';
import { signInThroughBrowser, startOAuthStack } from '../support/oauth-stack.js';
import { startRogueOidc } from '../support/rogue-oidc.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';

describe('provider configuration', () => {
  it('defaults provider B to GitHub and accepts https or loopback-http providers only', () => {
    const config = loadAccountConfig({
      IDPB_CLIENT_ID: 'id',
      IDPB_CLIENT_SECRET: 's',
      IDPA_ISSUER: 'https://accounts.google.com/',
      IDPA_CLIENT_ID: 'web',
      IDPA_MOBILE_CLIENT_IDS: 'ios, android',
    });
    expect(config.oauth.idpb).toMatchObject({
      authorizeUrl: 'https://github.com/login/oauth/authorize',
      tokenUrl: 'https://github.com/login/oauth/access_token',
      userUrl: 'https://api.github.com/user',
      emailsUrl: 'https://api.github.com/user/emails',
      scopes: 'read:user user:email',
      subjectField: 'id',
      pkce: true,
    });
    expect(config.oauth.idpa).toMatchObject({
      issuer: 'https://accounts.google.com',
      scopes: 'openid email profile',
      mobileClientIds: ['ios', 'android', 'web'],
    });
    expect(config.oauth.authCodeTtlSeconds).toBe(60);
    expect(loadAccountConfig({ IDPB_EMAILS_URL: 'none' }).oauth.idpb.emailsUrl).toBeUndefined();
    expect(loadAccountConfig({ IDPA_ISSUER: 'http://127.0.0.1:4000' }).oauth.idpa.issuer).toBe('http://127.0.0.1:4000');
    expect(() => loadAccountConfig({ IDPA_ISSUER: 'http://idp.example.com' })).toThrow(/IDPA_ISSUER: must be https/);
    expect(() => loadAccountConfig({ IDPB_TOKEN_URL: 'ftp://x' })).toThrow(/IDPB_TOKEN_URL/);
    expect(() => loadAccountConfig({ AUTH_CODE_TTL_SECONDS: '61' })).toThrow(/AUTH_CODE_TTL_SECONDS/);
  });
});

describe('an account service without provider settings', () => {
  let account: TestAccount;
  let api: string;
  const post = (path: string, body: unknown) =>
    fetch(`${api}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  beforeAll(async () => {
    account = await startTestAccount('pglite', { RATE_LIMIT_MULTIPLIER: '1' });
    api = `${account.url}/api/v1`;
  });
  afterAll(() => account?.stop());

  it('answers 503 naming the missing settings', async () => {
    const a = await fetch(`${api}/auth/oauth/idpa`, { redirect: 'manual' });
    expect(a.status).toBe(503);
    expect(await a.json()).toEqual({
      code: 'PROVIDER_NOT_CONFIGURED',
      detail: 'Provider A is not configured: set IDPA_ISSUER, IDPA_CLIENT_ID, IDPA_CLIENT_SECRET',
    });
    const b = await fetch(`${api}/auth/oauth/idpb`, { redirect: 'manual' });
    expect(await b.json()).toEqual({ code: 'PROVIDER_NOT_CONFIGURED', detail: 'Provider B is not configured: set IDPB_CLIENT_ID, IDPB_CLIENT_SECRET' });
    const mobile = await post('/auth/mobile/idpa', { id_token: 'a.b.c' });
    expect(mobile.status).toBe(503);
    expect(await mobile.json()).toMatchObject({ detail: expect.stringContaining('IDPA_ISSUER, IDPA_MOBILE_CLIENT_IDS') });
    // The callback still answers with a redirect.
    const callback = await fetch(`${api}/auth/oauth/idpb/callback?code=x&state=y`, { redirect: 'manual' });
    expect(callback.status).toBe(302);
    expect(callback.headers.get('location')).toBe(`${account.url}/auth/callback?error=not_configured`);
  });

  it('lists only the configured methods, and sends a browser that starts an unconfigured one to a readable page', async () => {
    expect(await (await fetch(`${api}/auth/methods`)).json()).toEqual({ methods: ['email', 'wallet', 'passkey', 'guest'] });
    const navigation = await fetch(`${api}/auth/oauth/idpa`, { redirect: 'manual', headers: { accept: 'text/html,application/xhtml+xml' } });
    expect(navigation.status).toBe(302);
    expect(navigation.headers.get('location')).toBe(`${account.url}/auth/callback?error=not_configured`);
  });

  it('sends the browser to FRONTEND_URL, keeping its path', async () => {
    const other = await startTestAccount('pglite', { FRONTEND_URL: 'https://app.example.com/web/' });
    try {
      const res = await fetch(`${other.url}/api/v1/auth/oauth/idpa/callback?code=x&state=y`, { redirect: 'manual' });
      expect(res.headers.get('location')).toBe('https://app.example.com/web/auth/callback?error=not_configured');
    } finally {
      await other.stop();
    }
  });

  it('publishes the OAuth, exchange and mobile paths in its OpenAPI document', async () => {
    const doc = (await (await fetch(`${api}/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
    for (const [path, method] of [
      ['/auth/oauth/idpa', 'get'],
      ['/auth/oauth/idpa/callback', 'get'],
      ['/auth/oauth/idpb', 'get'],
      ['/auth/oauth/idpb/callback', 'get'],
      ['/auth/exchange', 'post'],
      ['/auth/mobile/idpa', 'post'],
    ] as const) {
      expect(doc.paths[path]?.[method], `${method} ${path}`).toBeDefined();
    }
  });

  it('rate limits per IP: start 30/min (429), callback 30/min (still a redirect), exchange and mobile 10/min', async () => {
    // Start and callback of both providers share one budget of 30 per minute (the tests above spent 4).
    const starts: number[] = [];
    while (starts.length < 31 && starts.at(-1) !== 429) starts.push((await fetch(`${api}/auth/oauth/idpb`, { redirect: 'manual' })).status);
    expect(starts).toEqual([...Array(26).fill(503), 429]);
    const callback = await fetch(`${api}/auth/oauth/idpa/callback?state=x`, { redirect: 'manual' });
    expect(callback.status).toBe(302);
    expect(callback.headers.get('location')).toMatch(/\/auth\/callback\?error=rate_limited$/);
    const exchanges = [];
    for (let i = 0; i < 11; i++) exchanges.push((await post('/auth/exchange', { code: 'nope' })).status);
    expect(exchanges.slice(0, 10).every((s) => s === 401)).toBe(true);
    expect(exchanges[10]).toBe(429);
    const mobiles = [];
    for (let i = 0; i < 10; i++) mobiles.push((await post('/auth/mobile/idpa', { id_token: 'a.b.c' })).status);
    expect(mobiles.at(-1)).toBe(429); // one spent above
  });
});

describe('provider A keys unavailable', () => {
  it('mobile sign-in answers 502 when the JWKS cannot be fetched, 401 never', async () => {
    const rogue = await startRogueOidc();
    rogue.jwks = { status: 500, body: { error: 'down' } };
    const account = await startTestAccount('pglite', { IDPA_ISSUER: rogue.issuer, IDPA_MOBILE_CLIENT_IDS: 'app' });
    try {
      const id_token = await rogue.sign({
        iss: rogue.issuer,
        aud: 'app',
        sub: 's',
        iat: Math.floor(Date.now() / 1000),
        exp: Math.floor(Date.now() / 1000) + 60,
      });
      const res = await fetch(`${account.url}/api/v1/auth/mobile/idpa`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id_token }),
      });
      expect(res.status).toBe(502);
      expect(await res.json()).toMatchObject({ code: 'PROVIDER_UNAVAILABLE' });
      rogue.jwks = undefined;
      const ok = await fetch(`${account.url}/api/v1/auth/mobile/idpa`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id_token }),
      });
      expect(ok.status).toBe(200);
    } finally {
      await account.stop();
      await rogue.close();
    }
  });
});

describe('provider B without PKCE and without an e-mail list', () => {
  it('omits PKCE when told to, and trusts no user-info e-mail without email_verified: true', async () => {
    const stack = await startOAuthStack('pglite', { IDPB_PKCE: 'false', IDPB_EMAILS_URL: 'none' });
    try {
      stack.b.requirePkce = false;
      const start = await fetch(`${stack.api}/auth/oauth/idpb`, { redirect: 'manual' });
      const url = new URL(start.headers.get('location') ?? '');
      expect(url.searchParams.has('code_challenge')).toBe(false);
      expect(url.searchParams.get('state')).toMatch(/^[\w-]{43}$/);

      const exchange = async ({ code, cookie }: { code: string | null; cookie: string }) => {
        const res = await fetch(`${stack.api}/auth/exchange`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', cookie },
          body: JSON.stringify({ code }),
        });
        const pair = (await res.json()) as { access_token: string };
        return ((await (await fetch(`${stack.api}/auth/me`, { headers: { authorization: `Bearer ${pair.access_token}` } })).json()) as { user_id: string })
          .user_id;
      };
      const viaA = await exchange(await signInThroughBrowser(stack, 'idpa', { login: 'zed' }));
      const viaB = await exchange(await signInThroughBrowser(stack, 'idpb', { login: 'zed' }));
      expect(viaB).not.toBe(viaA);
      const identity = await stack.account.services.store.db.identity.findFirstOrThrow({ where: { provider: 'idpb', userId: viaB } });
      expect(identity).toMatchObject({ email: 'zed@example.test', emailVerified: false });
    } finally {
      await stack.stop();
    }
  });
});
