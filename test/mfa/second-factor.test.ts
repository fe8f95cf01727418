/**
 * The second factor over real HTTP, with codes from oathtool (an authenticator nobody here
 * wrote): enrolment and confirmation, the `aal1` session that can only pass the second step, the
 * `aal2` pair it gets, recovery codes, removal, passkeys with and without user verification;
 * and the attacks — a replayed code, an `aal1` token on every other kind of endpoint, a reused
 * recovery code, another user's factor id, confirming twice, a session opened before the factor
 * existed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PublicKeyCredentialCreationOptionsJSON, PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/server';
import { accountApi, bearer, newWallet, uniqueEmail, type Pair } from '../support/account-api.js';
import { enrolTotp, readOtpauthUri, totpCode } from '../support/authenticator.js';
import { accountStoreKinds } from '../support/postgres.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';
import { SoftAuthenticator } from '../support/soft-authenticator.js';

const kinds = await accountStoreKinds();
const FRONTEND = 'http://app.test:8080';

/** The claims of an access token, read as any client may (its signature is the service's business). */
const claimsOf = (pair: Pair): Record<string, unknown> =>
  JSON.parse(Buffer.from(pair.access_token.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;

describe.each(kinds)('second factor on %s', (kind) => {
  let account: TestAccount;
  let api: ReturnType<typeof accountApi>;

  const expectError = async (res: Response, status: number, code: string) => {
    const body = (await res.json()) as { code: string };
    expect({ status: res.status, code: body.code }).toEqual({ status, code });
  };
  const verify = (pair: Pair, body: unknown) => api.post('/auth/mfa/verify', body, bearer(pair));
  const refresh = (pair: Pair) => api.post('/auth/refresh', { refresh_token: pair.refresh_token });
  const factors = async (pair: Pair) =>
    api.json<{ factors: Array<{ id: string; confirmed: boolean }>; recovery_codes_left: number }>(await api.get('/account/mfa', bearer(pair)));
  /** A full account with a confirmed authenticator app; `pair` is the enrolling session's (now aal2). */
  const enrolled = async (tag: string) => {
    const email = uniqueEmail(tag);
    const pair = await api.email(email);
    return { email, pair, ...(await enrolTotp(api, pair)) };
  };

  beforeAll(async () => {
    account = await startTestAccount(kind, { FRONTEND_URL: FRONTEND });
    api = accountApi(account);
  });
  afterAll(async () => {
    await account.stop();
  });

  it('enrols an authenticator app: its URI, inactive until oathtool confirms it, ten recovery codes, listed on the account', async () => {
    const email = uniqueEmail('enrol');
    const pair = await api.email(email);
    const started = await api.json<{ factor_id: string; secret: string; otpauth_uri: string }>(await api.post('/account/mfa/totp', undefined, bearer(pair)));
    expect(readOtpauthUri(started.otpauth_uri)).toEqual({
      issuer: 'Agent Accounts',
      account: email,
      secret: started.secret,
      algorithm: 'SHA1',
      digits: '6',
      period: '30',
    });
    expect(await factors(pair)).toEqual({
      factors: [expect.objectContaining({ id: started.factor_id, kind: 'totp', confirmed: false })],
      recovery_codes_left: 0,
    });
    // Unconfirmed, it guards nothing: a sign-in meanwhile is a plain one.
    const meanwhile = await api.email(email);
    expect(claimsOf(meanwhile).aal).toBeUndefined();
    expect((await api.get('/account', bearer(meanwhile))).status).toBe(200);

    const wrong = String((Number(await totpCode(started.secret)) + 1) % 1_000_000).padStart(6, '0');
    await expectError(await api.post(`/account/mfa/totp/${started.factor_id}/confirm`, { code: wrong }, bearer(pair)), 401, 'INVALID_CODE');
    const confirmed = await api.post(`/account/mfa/totp/${started.factor_id}/confirm`, { code: await totpCode(started.secret) }, bearer(pair));
    const { recovery_codes } = await api.json<{ recovery_codes: string[] }>(confirmed);
    expect(recovery_codes).toHaveLength(10);
    expect(new Set(recovery_codes).size).toBe(10);
    for (const code of recovery_codes) expect(code).toMatch(/^[0-9a-hjkmnp-tv-z]{4}(-[0-9a-hjkmnp-tv-z]{4}){3}$/);
    expect(await factors(pair)).toEqual({ factors: [expect.objectContaining({ id: started.factor_id, confirmed: true })], recovery_codes_left: 10 });
    // The enrolling session passed the factor; the one opened meanwhile now waits for it.
    expect((await api.get('/account', bearer(pair))).status).toBe(200);
    await expectError(await api.get('/account', bearer(meanwhile)), 403, 'MFA_REQUIRED');
    const activity = await api.json<{ events: Array<{ type: string; detail: Record<string, string> }> }>(await api.get('/account/activity', bearer(pair)));
    expect(activity.events[0]).toMatchObject({ type: 'mfa_enabled', detail: { method: 'totp' } });
  });

  it('a first-factor sign-in is aal1; refresh keeps it; oathtool’s code raises the same session to aal2', async () => {
    const { email, secret } = await enrolled('signin');
    const first = await api.email(email);
    expect(claimsOf(first)).toMatchObject({ aal: 'aal1' });
    const refreshed = await api.json<Pair>(await refresh(first));
    expect(claimsOf(refreshed)).toMatchObject({ aal: 'aal1', sid: claimsOf(first).sid });

    const passed = await api.json<Pair>(await verify(refreshed, { code: await totpCode(secret, { steps: 1 }) }));
    expect(claimsOf(passed)).toMatchObject({ aal: 'aal2', sid: claimsOf(first).sid });
    expect((await api.me(passed)).session_id).toBe(claimsOf(first).sid);
    expect((await api.get('/account', bearer(passed))).status).toBe(200);
    // The aal1 tokens stay aal1: the access token is still held, the refresh token is spent.
    await expectError(await api.get('/account', bearer(refreshed)), 403, 'MFA_REQUIRED');
    await expectError(await refresh(refreshed), 401, 'INVALID_REFRESH_TOKEN');
    // Refresh keeps the session's level.
    expect(claimsOf(await api.json<Pair>(await refresh(passed)))).toMatchObject({ aal: 'aal2' });
    const events = (await api.json<{ events: Array<{ type: string; detail: Record<string, string> }> }>(await api.get('/account/activity', bearer(passed))))
      .events;
    expect(events[0]).toMatchObject({ type: 'mfa_verified', detail: { method: 'totp' } });
  });

  it('an aal1 token is refused on every other kind of endpoint (REST, tRPC, the agent proxy, admin, linking) and logout still works', async () => {
    const { email, factorId } = await enrolled('aal1-everywhere');
    const first = await api.email(email);
    const auth = bearer(first);
    const refusals = [
      await api.get('/auth/me', auth),
      await api.get('/account', auth),
      await api.get('/account/sessions', auth),
      await api.get('/account/activity', auth),
      await api.get('/account/mfa', auth),
      await api.post('/account/mfa/totp', undefined, auth),
      await api.del(`/account/mfa/${factorId}`, auth),
      await api.post(`/account/mfa/totp/${factorId}/confirm`, { code: '000000' }, auth),
      await api.del('/account', auth),
      await api.post('/auth/logout/all', undefined, auth),
      await api.post('/auth/passkey/register/options', {}, auth),
      // Linking with it: a flow started or finished with an aal1 bearer.
      await api.post('/auth/login/email', { email: uniqueEmail('link') }, auth),
      await api.post('/auth/wallet/challenge', { address: newWallet().address }, auth),
      await api.get('/agent/chats', auth),
      await api.get('/admin/users', auth),
    ];
    for (const res of refusals) await expectError(res, 403, 'MFA_REQUIRED');
    const overTrpc = await fetch(`${account.url}/trpc/account.get`, { headers: auth });
    expect(overTrpc.status).toBe(403);
    expect(((await overTrpc.json()) as { error: { json: { data: { code: string } } } }).error.json.data.code).toBe('MFA_REQUIRED');
    // Logout with its refresh token ends the waiting session.
    expect((await api.post('/auth/logout', { refresh_token: first.refresh_token })).status).toBe(204);
    await expectError(await verify(first, { code: '123456' }), 401, 'SESSION_REVOKED');
  });

  it('a code is accepted once: a replay, or an older code after a newer one, is 401 INVALID_CODE', async () => {
    const { email, secret, confirmedWith } = await enrolled('replay');
    // The code that confirmed the factor is spent: it does not open a sign-in.
    const a = await api.email(email);
    await expectError(await verify(a, { code: confirmedWith.code }), 401, 'INVALID_CODE');
    const next = await totpCode(secret, { at: confirmedWith.at, steps: 1 });
    expect((await verify(a, { code: next })).status).toBe(200);
    const b = await api.email(email);
    await expectError(await verify(b, { code: next }), 401, 'INVALID_CODE');
    await expectError(await verify(b, { code: await totpCode(secret, { at: confirmedWith.at, steps: -1 }) }), 401, 'INVALID_CODE');
    await expectError(await api.get('/account', bearer(b)), 403, 'MFA_REQUIRED');
  });

  it('two racing uses of one code: exactly one session passes', async () => {
    const { email, secret } = await enrolled('race');
    const [c, d] = [await api.email(email), await api.email(email)];
    const code = await totpCode(secret, { steps: 1 });
    const race = await Promise.all([verify(c, { code }), verify(d, { code })]);
    expect(race.map((r) => r.status).sort()).toEqual([200, 401]);
  });

  it('recovery codes: each opens one sign-in, typed any case with spaces; a used one is refused', async () => {
    const { email, recoveryCodes, pair } = await enrolled('recovery');
    const [code, other] = recoveryCodes as [string, string];
    const first = await api.email(email);
    const passed = await api.json<Pair>(await verify(first, { recovery_code: ` ${code.toUpperCase().replaceAll('-', ' ')} ` }));
    expect(claimsOf(passed)).toMatchObject({ aal: 'aal2' });
    const second = await api.email(email);
    await expectError(await verify(second, { recovery_code: code }), 401, 'INVALID_CODE');
    await expectError(await verify(second, { recovery_code: 'not-a-code' }), 401, 'INVALID_CODE');
    await expectError(await verify(second, { recovery_code: 42 }), 401, 'INVALID_CODE');
    expect((await verify(second, { recovery_code: other })).status).toBe(200);
    expect((await factors(pair)).recovery_codes_left).toBe(8);
    // Neither or both: a malformed request.
    await expectError(await verify(second, {}), 400, 'VALIDATION_FAILED');
    await expectError(await verify(second, { code: '123456', recovery_code: code }), 400, 'VALIDATION_FAILED');
  });

  it("another user's factor id is 404 to confirm or remove, and it stays as it was", async () => {
    const alice = await api.email(uniqueEmail('alice-mfa'));
    const bob = await enrolled('bob-mfa');
    const pending = await api.json<{ factor_id: string; secret: string }>(await api.post('/account/mfa/totp', undefined, bearer(alice)));
    await expectError(
      await api.post(`/account/mfa/totp/${bob.factorId}/confirm`, { code: await totpCode(bob.secret, { steps: 1 }) }, bearer(alice)),
      404,
      'MFA_FACTOR_NOT_FOUND',
    );
    await expectError(await api.del(`/account/mfa/${bob.factorId}`, bearer(alice)), 404, 'MFA_FACTOR_NOT_FOUND');
    await expectError(await api.del(`/account/mfa/${pending.factor_id}`, bearer(bob.pair)), 404, 'MFA_FACTOR_NOT_FOUND');
    await expectError(
      await api.post(`/account/mfa/totp/${pending.factor_id}/confirm`, { code: await totpCode(pending.secret) }, bearer(bob.pair)),
      404,
      'MFA_FACTOR_NOT_FOUND',
    );
    await expectError(await api.del('/account/mfa/not-a-uuid', bearer(alice)), 404, 'MFA_FACTOR_NOT_FOUND');
    expect((await factors(bob.pair)).factors).toEqual([expect.objectContaining({ id: bob.factorId, confirmed: true })]);
    expect((await factors(alice)).factors).toEqual([expect.objectContaining({ id: pending.factor_id, confirmed: false })]);
  });

  it('confirming twice is 409 and makes no new recovery codes; a second app while one is active is 409; a new enrolment replaces an unconfirmed one', async () => {
    const { pair, factorId, secret, recoveryCodes, email } = await enrolled('twice');
    await expectError(
      await api.post(`/account/mfa/totp/${factorId}/confirm`, { code: await totpCode(secret, { steps: 1 }) }, bearer(pair)),
      409,
      'MFA_ALREADY_CONFIRMED',
    );
    await expectError(await api.post('/account/mfa/totp', undefined, bearer(pair)), 409, 'MFA_ALREADY_ENROLLED');
    const first = await api.email(email);
    expect((await verify(first, { recovery_code: recoveryCodes[0] })).status).toBe(200);

    const other = await api.email(uniqueEmail('replace'));
    const old = await api.json<{ factor_id: string }>(await api.post('/account/mfa/totp', undefined, bearer(other)));
    const fresh = await api.json<{ factor_id: string; secret: string }>(await api.post('/account/mfa/totp', undefined, bearer(other)));
    expect((await factors(other)).factors.map((f) => f.id)).toEqual([fresh.factor_id]);
    await expectError(
      await api.post(`/account/mfa/totp/${old.factor_id}/confirm`, { code: await totpCode(fresh.secret) }, bearer(other)),
      404,
      'MFA_FACTOR_NOT_FOUND',
    );
  });

  it('removing the factor needs aal2; then sign-ins are plain again, waiting sessions end, the recovery codes are gone', async () => {
    const { email, pair, factorId, secret, recoveryCodes } = await enrolled('remove');
    const waiting = await api.email(email);
    const aal2 = await api.json<Pair>(await verify(await api.email(email), { code: await totpCode(secret, { steps: 1 }) }));
    await expectError(await api.del(`/account/mfa/${factorId}`, bearer(waiting)), 403, 'MFA_REQUIRED');
    expect((await api.del(`/account/mfa/${factorId}`, bearer(aal2))).status).toBe(204);
    expect(await factors(pair)).toEqual({ factors: [], recovery_codes_left: 0 });
    await expectError(await verify(waiting, { code: '123456' }), 401, 'SESSION_REVOKED');
    const plain = await api.email(email);
    expect(claimsOf(plain).aal).toBeUndefined();
    await expectError(await verify(plain, { recovery_code: recoveryCodes[1] }), 409, 'MFA_NOT_ENROLLED');
    // An unconfirmed factor guards nothing and goes without a second factor.
    const pending = await api.json<{ factor_id: string }>(await api.post('/account/mfa/totp', undefined, bearer(plain)));
    expect((await api.del(`/account/mfa/${pending.factor_id}`, bearer(plain))).status).toBe(204);
  });

  it('guests and accounts nothing vouches for cannot enrol (403 GUEST_LIMITED)', async () => {
    await expectError(await api.post('/account/mfa/totp', undefined, bearer(await api.guest())), 403, 'GUEST_LIMITED');
    await expectError(await api.post('/account/mfa/totp', undefined, bearer(await api.wallet(newWallet()))), 403, 'GUEST_LIMITED');
  });

  it('a passkey with user verification is two factors (aal2 at once); without it, a first factor like any', async () => {
    const { pair, secret } = await enrolled('passkey');
    const device = new SoftAuthenticator(FRONTEND);
    const options = await api.json<PublicKeyCredentialCreationOptionsJSON>(await api.post('/auth/passkey/register/options', {}, bearer(pair)));
    // Registered from an aal2 session of the same account: the new session is aal2 too.
    const registered = await api.json<Pair>(await api.post('/auth/passkey/register/verify', { response: device.create(options) }, bearer(pair)));
    expect(claimsOf(registered)).toMatchObject({ aal: 'aal2' });
    const login = async (userVerified: boolean) => {
      const challenge = await api.json<PublicKeyCredentialRequestOptionsJSON>(await api.post('/auth/passkey/login/options', {}));
      return api.json<Pair>(await api.post('/auth/passkey/login/verify', { response: device.get(challenge, { userVerified }) }));
    };
    expect(claimsOf(await login(true))).toMatchObject({ aal: 'aal2' });
    const presence = await login(false);
    expect(claimsOf(presence)).toMatchObject({ aal: 'aal1' });
    await expectError(await api.get('/account', bearer(presence)), 403, 'MFA_REQUIRED');
    expect((await verify(presence, { code: await totpCode(secret, { steps: 1 }) })).status).toBe(200);
  });

  it("an aal2 session carries its level only to its own account: a code it did not ask for signs in to the address's account at aal1", async () => {
    const owner = await enrolled('owner');
    const other = await enrolled('other'); // other.pair is an aal2 session of another account
    const { code } = await account.services.email.request(owner.email, new Date());
    const signedIn = await api.json<Pair>(await api.post('/auth/verify-magic-link', { email: owner.email, code }, bearer(other.pair)));
    expect(claimsOf(signedIn)).toMatchObject({ aal: 'aal1', sub: claimsOf(owner.pair).sub });
  });
});
