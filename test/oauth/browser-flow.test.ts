/**
 * The browser OAuth flows end to end at HTTP level, against real providers on loopback:
 * oidc-provider as provider A (its own login and consent pages) and a GitHub-shaped OAuth 2
 * server as provider B. Account linking and guest upgrade included.
 */
import { createTRPCClient, httpLink, TRPCClientError } from '@trpc/client';
import superjson from 'superjson';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AccountRouter } from '../../server/account/router.js';
import { bindingCookie } from '../../server/account/auth/oauth/cookies.js';
import { TestBrowser } from '../support/browser.js';
import { signInThroughBrowser, startOAuthStack, type OAuthStack } from '../support/oauth-stack.js';
import { accountStoreKinds } from '../support/postgres.js';
import type { TokenPair as Pair } from '@contracts/account/tokens.js';
import { testDeviceId } from '../support/devices.js';

const kinds = await accountStoreKinds();

describe.each(kinds)('browser OAuth on %s', (kind) => {
  let stack: OAuthStack;
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${stack.api}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  /** `flow`: a finished browser flow, its code and the exchange cookie its browser holds. */
  const exchange = async (flow: { code: string | null; cookie: string }, headers: Record<string, string> = {}): Promise<Pair> => {
    expect(flow.code).toEqual(expect.any(String));
    const res = await post('/auth/exchange', { code: flow.code }, { cookie: flow.cookie, ...headers });
    expect(res.status).toBe(200);
    return (await res.json()) as Pair;
  };
  const me = async (pair: Pair) =>
    (await (await fetch(`${stack.api}/auth/me`, { headers: { authorization: `Bearer ${pair.access_token}` } })).json()) as { user_id: string; guest: boolean };
  const signIn = async (provider: 'idpa' | 'idpb', login: string) => me(await exchange(await signInThroughBrowser(stack, provider, { login })));
  const guest = async (device: string) => (await (await post('/auth/guest', { device_id: testDeviceId(device) })).json()) as Pair;
  const trpc = (authorization?: string, cookie?: string) =>
    createTRPCClient<AccountRouter>({
      links: [
        httpLink({
          url: `${stack.account.url}/trpc`,
          transformer: superjson,
          headers: () => ({ ...(authorization ? { authorization } : {}), ...(cookie ? { cookie } : {}) }),
        }),
      ],
    });
  const db = () => stack.account.services.store.db;

  beforeAll(async () => {
    stack = await startOAuthStack(kind);
  });
  afterAll(() => stack?.stop());

  it('offers both providers once they are configured', async () => {
    expect(await (await fetch(`${stack.api}/auth/methods`)).json()).toEqual({ methods: ['email', 'idpa', 'idpb', 'wallet', 'passkey', 'guest'] });
  });

  it('signs in with provider A: consent screen, callback, one-time code, token pair', async () => {
    const flow = await signInThroughBrowser(stack, 'idpa', { login: 'ann' });
    expect(flow.error).toBeNull();
    expect(flow.landing.startsWith(`${stack.account.services.config.frontendUrl}/auth/callback?code=`)).toBe(true);
    const pair = await exchange(flow);
    expect(pair).toMatchObject({ token_type: 'bearer', expires_in: 900 });
    const user = await me(pair);
    expect(user.guest).toBe(false);
    const identity = await db().identity.findUniqueOrThrow({ where: { provider_subject: { provider: 'idpa', subject: 'ann' } } });
    expect(identity).toMatchObject({ userId: user.user_id, email: 'ann@example.test', emailVerified: true });
    // The same person again → the same account.
    expect((await signIn('idpa', 'ann')).user_id).toBe(user.user_id);
  });

  it('signs in with provider B (GitHub-shaped): subject is the numeric id, e-mail from /user/emails', async () => {
    const user = await signIn('idpb', 'ben');
    const identity = await db().identity.findFirstOrThrow({ where: { provider: 'idpb', userId: user.user_id } });
    expect(identity.subject).toMatch(/^\d+$/);
    expect(identity).toMatchObject({ email: 'ben@example.test', emailVerified: true });
    expect((await signIn('idpb', 'ben')).user_id).toBe(user.user_id);
  });

  it('links a verified e-mail across providers; an unverified one never links', async () => {
    const viaA = await signIn('idpa', 'cleo');
    expect((await signIn('idpb', 'cleo')).user_id).toBe(viaA.user_id);
    const owner = await signIn('idpa', 'dan');
    const impostor = await signIn('idpb', 'unverified-dan'); // asserts dan@example.test, unverified
    expect(impostor.user_id).not.toBe(owner.user_id);
    const impostorA = await signIn('idpa', 'unverified-dan');
    expect(impostorA.user_id).not.toBe(owner.user_id);
  });

  it.each(['idpa', 'idpb'] as const)('consent denied at %s → ?error=access_denied, nothing created', async (provider) => {
    const users = await db().user.count();
    const { code, error } = await signInThroughBrowser(stack, provider, { deny: true });
    expect({ code, error }).toEqual({ code: null, error: 'access_denied' });
    expect(await db().user.count()).toBe(users);
  });

  it('sets a short-lived HttpOnly SameSite=Lax binding cookie scoped to the provider path', async () => {
    const res = await fetch(`${stack.api}/auth/oauth/idpa`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const cookie = res.headers.getSetCookie()[0] ?? '';
    expect(cookie).toMatch(/^oauth_idpa=[\w-]{43}; Path=\/api\/v1\/auth\/oauth\/idpa; HttpOnly; SameSite=Lax; Max-Age=600$/);
    const location = new URL(res.headers.get('location') ?? '');
    expect(location.origin).toBe(stack.a.issuer);
    expect(Object.fromEntries(location.searchParams)).toMatchObject({
      response_type: 'code',
      client_id: 'web-client',
      redirect_uri: `${stack.api}/auth/oauth/idpa/callback`,
      code_challenge_method: 'S256',
      scope: 'openid email profile',
    });
    for (const p of ['state', 'nonce', 'code_challenge']) expect(location.searchParams.get(p)).toMatch(/^[\w-]{43,}$/);
    expect(bindingCookie('idpa', 'v', 'https://accounts.example.com')).toMatch(/; Secure$/);
  });

  /** What the web client does for a signed-in guest: tRPC start with the guest header, then navigate. */
  const startAsGuest = async (pair: Pair, provider: 'idpa' | 'idpb') => {
    const browser = new TestBrowser();
    const started = await browser.request(`${stack.account.url}/trpc/auth.oauth.authorizationUrl`, {
      json: { json: { provider } },
      headers: { authorization: `Bearer ${pair.access_token}` },
    });
    expect(started.status).toBe(200);
    expect(browser.cookies.has(`oauth_${provider}`)).toBe(true);
    const { location } = (JSON.parse(started.body) as { result: { data: { json: { location: string } } } }).result.data.json;
    return { browser, location };
  };

  it('upgrades a guest in place through the tRPC start (guest header bound to the state)', async () => {
    const pair = await guest('device-upgrade-a');
    const guestUser = await me(pair);
    const { browser, location } = await startAsGuest(pair, 'idpa');
    const flow = await signInThroughBrowser(stack, 'idpa', { login: 'gwen', browser, startUrl: location });
    // The account is already upgraded at the callback; the code opens a session of the same user.
    expect(await me(await exchange(flow))).toMatchObject({ user_id: guestUser.user_id, guest: false });
    expect(await db().identity.count({ where: { userId: guestUser.user_id, provider: 'guest' } })).toBe(0);
  });

  it('a guest starting with an identity of another account → ?error=identity_in_use, the guest stays a guest', async () => {
    await signIn('idpb', 'hana');
    const pair = await guest('device-upgrade-taken');
    const { browser, location } = await startAsGuest(pair, 'idpb');
    const { code, error } = await signInThroughBrowser(stack, 'idpb', { login: 'hana', browser, startUrl: location });
    expect({ code, error }).toEqual({ code: null, error: 'identity_in_use' });
    expect(await me(pair)).toMatchObject({ guest: true });
  });

  it('the tRPC start refuses an invalid Authorization header instead of ignoring it', async () => {
    const res = await trpc('Bearer a.b.c')
      .auth.oauth.authorizationUrl.mutate({ provider: 'idpa' })
      .catch((e: unknown) => e);
    expect((res as TRPCClientError<AccountRouter>).data).toMatchObject({ httpStatus: 401 });
  });

  it('sets an HttpOnly exchange cookie at the callback; the exchange clears it', async () => {
    const flow = await signInThroughBrowser(stack, 'idpa', { login: 'ivy' });
    const callback = flow.browser.hops.find((hop) => hop.url.includes('/auth/oauth/idpa/callback'));
    expect(callback?.location).toContain('code=');
    expect(flow.cookie).toMatch(/^oauth_exchange=[\w-]{43}$/);
    const res = await post('/auth/exchange', { code: flow.code }, { cookie: flow.cookie });
    expect(res.status).toBe(200);
    expect(res.headers.getSetCookie()).toEqual(['oauth_exchange=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0']);
  });

  it('exchanges over tRPC too, with the same error codes', async () => {
    const { code, cookie } = await signInThroughBrowser(stack, 'idpa', { login: 'jo' });
    const pair = await trpc(undefined, cookie).auth.oauth.exchange.mutate({ code: code as string });
    expect(pair.token_type).toBe('bearer');
    const replay = await trpc(undefined, cookie)
      .auth.oauth.exchange.mutate({ code: code as string })
      .catch((e: unknown) => e);
    expect(replay).toBeInstanceOf(TRPCClientError);
    expect((replay as TRPCClientError<AccountRouter>).data).toMatchObject({ code: 'INVALID_AUTH_CODE', httpStatus: 401 });
  });
});
