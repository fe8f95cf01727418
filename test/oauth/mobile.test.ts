/**
 * POST /auth/mobile/idpa: ID tokens from provider A's native SDKs, verified against provider A's
 * discovered JWKS (a real oidc-provider whose signing key the test also holds), with every
 * forgery we know of refused.
 */
import { createTRPCClient, httpLink } from '@trpc/client';
import { generateKeyPair, SignJWT } from 'jose';
import superjson from 'superjson';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AccountRouter } from '../../server/account/router.js';
import { MOBILE_CLIENT_IDS, signInThroughBrowser, startOAuthStack, WEB_CLIENT, type OAuthStack } from '../support/oauth-stack.js';
import { testDeviceId } from '../support/devices.js';

describe('native sign-in with a provider-A ID token', () => {
  let stack: OAuthStack;
  const mobile = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${stack.api}/auth/mobile/idpa`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const userOf = async (res: Response) => {
    expect(res.status).toBe(200);
    const pair = (await res.json()) as { access_token: string };
    return (await (await fetch(`${stack.api}/auth/me`, { headers: { authorization: `Bearer ${pair.access_token}` } })).json()) as {
      user_id: string;
      guest: boolean;
    };
  };
  const now = () => Math.floor(Date.now() / 1000);
  const token = (claims: Record<string, unknown> = {}, opts?: Parameters<OAuthStack['a']['signIdToken']>[1]) =>
    stack.a.signIdToken({ sub: 'native-1', aud: MOBILE_CLIENT_IDS[0], email: 'native@example.test', email_verified: true, ...claims }, opts);
  const refused = async (res: Response) => {
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ detail: expect.stringMatching(/^The ID token is not valid/), code: 'INVALID_ID_TOKEN' });
  };

  beforeAll(async () => {
    stack = await startOAuthStack();
  });
  afterAll(() => stack?.stop());

  it('accepts a token for a native client id and signs into the same account as the web flow', async () => {
    const first = await userOf(await mobile({ id_token: await token() }));
    expect(first.guest).toBe(false);
    expect((await userOf(await mobile({ id_token: await token({ aud: MOBILE_CLIENT_IDS[1] }) }))).user_id).toBe(first.user_id);
    // The web flow's identity for provider A is the same provider + subject.
    const { code, cookie } = await signInThroughBrowser(stack, 'idpa', { login: 'native-web' });
    const web = await userOf(
      await fetch(`${stack.api}/auth/exchange`, { method: 'POST', headers: { 'content-type': 'application/json', cookie }, body: JSON.stringify({ code }) }),
    );
    expect((await userOf(await mobile({ id_token: await token({ sub: 'native-web', email: undefined }) }))).user_id).toBe(web.user_id);
  });

  it('also accepts the web client id (it is part of the allowlist)', async () => {
    await userOf(await mobile({ id_token: await token({ sub: 'native-2', aud: WEB_CLIENT.clientId, email: undefined }) }));
  });

  it.each<[string, () => Promise<string>]>([
    ['an audience outside the allowlist', () => token({ aud: 'someone-elses-app' })],
    ['several audiences with a foreign azp', () => token({ aud: [MOBILE_CLIENT_IDS[0], 'other'], azp: 'other' })],
    ['a wrong issuer', () => token({ iss: 'https://accounts.evil.example' })],
    ['an expired token', () => token({ iat: now() - 7200, exp: now() - 3600 })],
    ['no exp', () => token({ exp: undefined })],
    ['a foreign key under the provider kid', () => token({}, { key: 'foreign' })],
    ['an unknown kid', () => token({}, { header: { kid: 'no-such-key' } })],
    [
      'alg none',
      async () => {
        const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
        return `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ iss: stack.a.issuer, aud: MOBILE_CLIENT_IDS[0], sub: 'x', iat: now(), exp: now() + 300 })}.`;
      },
    ],
    [
      'HS256 keyed with the client secret',
      () =>
        new SignJWT({ iss: stack.a.issuer, aud: MOBILE_CLIENT_IDS[0], sub: 'x' })
          .setProtectedHeader({ alg: 'HS256' })
          .setIssuedAt()
          .setExpirationTime('5m')
          .sign(new TextEncoder().encode(WEB_CLIENT.clientSecret)),
    ],
    [
      'ES256 from a key the provider never published',
      async () =>
        new SignJWT({ iss: stack.a.issuer, aud: MOBILE_CLIENT_IDS[0], sub: 'x' })
          .setProtectedHeader({ alg: 'ES256' })
          .setIssuedAt()
          .setExpirationTime('5m')
          .sign((await generateKeyPair('ES256')).privateKey),
    ],
    [
      'a tampered payload',
      async () => {
        const [h, p, s] = (await token()).split('.');
        const claims = JSON.parse(Buffer.from(p as string, 'base64url').toString()) as Record<string, unknown>;
        return `${h}.${Buffer.from(JSON.stringify({ ...claims, sub: 'admin' })).toString('base64url')}.${s}`;
      },
    ],
    ['no JWT at all', async () => 'not-a-jwt'],
  ])('refuses %s with 401 INVALID_ID_TOKEN', async (_name, make) => {
    await refused(await mobile({ id_token: await make() }));
  });

  it('checks the nonce when the app sends one', async () => {
    await userOf(await mobile({ id_token: await token({ sub: 'nonce-user', nonce: 'n-123' }), nonce: 'n-123' }));
    await refused(await mobile({ id_token: await token({ sub: 'nonce-user', nonce: 'n-123' }), nonce: 'n-456' }));
    await refused(await mobile({ id_token: await token({ sub: 'nonce-user' }), nonce: 'n-123' }));
  });

  it('validates the body: 400 for a missing or empty id_token', async () => {
    for (const body of [{}, { id_token: '' }, { id_token: 5 }]) expect((await mobile(body)).status).toBe(400);
  });

  it('links a verified e-mail, never an unverified one', async () => {
    const owner = await userOf(await mobile({ id_token: await token({ sub: 'owner-1', email: 'owner@example.test' }) }));
    expect((await userOf(await mobile({ id_token: await token({ sub: 'owner-2', email: 'owner@example.test' }) }))).user_id).toBe(owner.user_id);
    const other = await userOf(await mobile({ id_token: await token({ sub: 'owner-3', email: 'owner@example.test', email_verified: false }) }));
    expect(other.user_id).not.toBe(owner.user_id);
  });

  it('upgrades a guest in place with the guest header; 409 when the identity is taken', async () => {
    const guest = (await (
      await fetch(`${stack.api}/auth/guest`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ device_id: testDeviceId('mobile-guest') }),
      })
    ).json()) as { access_token: string };
    const auth = { authorization: `Bearer ${guest.access_token}` };
    const before = (await (await fetch(`${stack.api}/auth/me`, { headers: auth })).json()) as { user_id: string };
    const taken = await mobile({ id_token: await token({ sub: 'native-1' }) }, auth);
    expect(taken.status).toBe(409);
    expect(await taken.json()).toMatchObject({ code: 'IDENTITY_IN_USE' });
    const upgraded = await userOf(await mobile({ id_token: await token({ sub: 'guest-native', email: undefined }) }, auth));
    expect(upgraded).toEqual({ ...upgraded, user_id: before.user_id, guest: false });
  });

  it('works over tRPC too', async () => {
    const trpc = createTRPCClient<AccountRouter>({ links: [httpLink({ url: `${stack.account.url}/trpc`, transformer: superjson })] });
    const pair = await trpc.auth.mobile.idpa.mutate({ id_token: await token({ sub: 'trpc-native' }) });
    expect(pair.token_type).toBe('bearer');
    await expect(trpc.auth.mobile.idpa.mutate({ id_token: await token({ aud: 'nope' }) })).rejects.toMatchObject({
      data: { code: 'INVALID_ID_TOKEN', httpStatus: 401 },
    });
  });
});
