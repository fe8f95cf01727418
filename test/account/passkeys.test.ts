/**
 * Passkeys over real HTTP with a software authenticator: a guest upgrades with one, a full
 * account adds several with names, sign-in with any of them; and the attacks — a replayed
 * challenge, an expired one, another account's registration challenge, another origin, another
 * relying party id, a signature counter that does not grow.
 */
import type { PublicKeyCredentialCreationOptionsJSON, PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountApi, bearer, uniqueEmail, type Pair } from '../support/account-api.js';
import { accountStoreKinds } from '../support/postgres.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';
import { SoftAuthenticator, type Overrides } from '../support/soft-authenticator.js';

const kinds = await accountStoreKinds();
const FRONTEND = 'http://app.test:8080';

describe.each(kinds)('passkeys on %s', (kind) => {
  let account: TestAccount;
  let api: ReturnType<typeof accountApi>;

  const expectError = async (res: Response, status: number, code: string) => {
    const body = (await res.json()) as { code: string };
    expect({ status: res.status, code: body.code }).toEqual({ status, code });
  };
  const registerOptions = async (pair: Pair) =>
    api.json<PublicKeyCredentialCreationOptionsJSON>(await api.post('/auth/passkey/register/options', {}, bearer(pair)));
  const loginOptions = async () => api.json<PublicKeyCredentialRequestOptionsJSON>(await api.post('/auth/passkey/login/options', {}));
  /** Registers a passkey for `pair`'s account on `device`; the answer of register/verify. */
  const register = async (pair: Pair, device: SoftAuthenticator, name?: string, overrides: Overrides = {}) =>
    api.post('/auth/passkey/register/verify', { response: device.create(await registerOptions(pair), overrides), ...(name ? { name } : {}) }, bearer(pair));
  const login = async (device: SoftAuthenticator, overrides: Parameters<SoftAuthenticator['get']>[1] = {}, headers: Record<string, string> = {}) =>
    api.post('/auth/passkey/login/verify', { response: device.get(await loginOptions(), overrides) }, headers);
  const identities = async (pair: Pair) =>
    (await api.json<{ identities: Array<{ id: string; method: string; label: string }> }>(await api.get('/account', bearer(pair)))).identities;

  beforeAll(async () => {
    account = await startTestAccount(kind, { FRONTEND_URL: FRONTEND });
    api = accountApi(account);
  });
  afterAll(async () => {
    await account.stop();
  });

  it('a guest adds a passkey, then signs in with it; the options ask for a discoverable credential, user verification preferred', async () => {
    const guest = await api.guest();
    const guestId = (await api.me(guest)).user_id;
    const options = await registerOptions(guest);
    expect(options).toMatchObject({
      rp: { id: 'app.test' },
      authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
      timeout: 300_000,
    });
    const device = new SoftAuthenticator(FRONTEND);
    const upgraded = await api.json<Pair>(
      await api.post('/auth/passkey/register/verify', { response: device.create(options), name: 'My laptop' }, bearer(guest)),
    );
    // A passkey vouches for nobody: the account keeps guest terms, now as `unverified` (docs/security.md).
    expect(await api.me(upgraded)).toMatchObject({ user_id: guestId, guest: true });
    expect(await identities(upgraded)).toEqual([expect.objectContaining({ method: 'passkey', label: 'My laptop' })]);

    const loginOpts = await loginOptions();
    expect(loginOpts).toMatchObject({ rpId: 'app.test', userVerification: 'preferred' });
    expect(loginOpts.allowCredentials ?? []).toEqual([]);
    const signedIn = await api.json<Pair>(await api.post('/auth/passkey/login/verify', { response: device.get(loginOpts) }));
    expect((await api.me(signedIn)).user_id).toBe(guestId);
    const events = (await api.json<{ events: Array<{ type: string; detail: Record<string, string> }> }>(await api.get('/account/activity', bearer(signedIn))))
      .events;
    // The last two are written in one transaction, at one instant.
    expect(events.map((e) => e.type).slice(0, 2)).toEqual(['sign_in', 'sign_in']);
    expect(
      events
        .map((e) => e.type)
        .slice(2)
        .sort(),
    ).toEqual(['identity_linked', 'passkey_added']);
    expect(events[0]?.detail.method).toBe('passkey');
  });

  it('a full account holds several passkeys with names, renames them, and each signs in', async () => {
    const pair = await api.email(uniqueEmail('keys'));
    const phone = new SoftAuthenticator(FRONTEND);
    const key = new SoftAuthenticator(FRONTEND);
    expect((await register(pair, phone, 'Phone')).status).toBe(200);
    expect((await register(pair, key, 'Yubikey')).status).toBe(200);
    const listed = await identities(pair);
    expect(listed.map((i) => [i.method, i.label])).toEqual([
      ['email', expect.any(String)],
      ['passkey', 'Phone'],
      ['passkey', 'Yubikey'],
    ]);
    // The second registration excluded the first credential.
    const again = await registerOptions(pair);
    expect(again.excludeCredentials?.map((c) => c.id).sort()).toEqual([phone.credentials[0]!.id, key.credentials[0]!.id].sort());

    const renamed = await api.call(
      'PATCH',
      `/account/passkeys/${listed[1]!.id}`,
      { ...bearer(pair), 'content-type': 'application/json' },
      { name: '  Old phone ' },
    );
    expect(renamed.status).toBe(200);
    expect(((await renamed.json()) as { identities: Array<{ label: string }> }).identities.map((i) => i.label)).toContain('Old phone');
    const userId = (await api.me(pair)).user_id;
    for (const device of [phone, key]) expect((await api.me(await api.json<Pair>(await login(device)))).user_id).toBe(userId);
  });

  it("renaming another account's passkey (or a non-passkey method) is 404 and changes nothing", async () => {
    const alice = await api.email(uniqueEmail('alice-pk'));
    const bob = await api.email(uniqueEmail('bob-pk'));
    await register(bob, new SoftAuthenticator(FRONTEND), 'Bob key');
    const bobKey = (await identities(bob)).find((i) => i.method === 'passkey')!;
    const aliceEmail = (await identities(alice))[0]!;
    const patch = (id: string) => api.call('PATCH', `/account/passkeys/${id}`, { ...bearer(alice), 'content-type': 'application/json' }, { name: 'mine now' });
    await expectError(await patch(bobKey.id), 404, 'PASSKEY_NOT_FOUND');
    await expectError(await patch(aliceEmail.id), 404, 'PASSKEY_NOT_FOUND');
    expect((await identities(bob)).find((i) => i.id === bobKey.id)?.label).toBe('Bob key');
  });

  it('a challenge works once: a replayed sign-in response is 401 INVALID_CHALLENGE', async () => {
    const pair = await api.email(uniqueEmail('replay'));
    const device = new SoftAuthenticator(FRONTEND);
    await register(pair, device);
    const response = device.get(await loginOptions());
    expect((await api.post('/auth/passkey/login/verify', { response })).status).toBe(200);
    await expectError(await api.post('/auth/passkey/login/verify', { response }), 401, 'INVALID_CHALLENGE');
    // A fresh signature over the spent challenge is no better.
    const fresh = device.get(await loginOptions(), {
      challenge: JSON.parse(Buffer.from(response.response.clientDataJSON, 'base64url').toString()).challenge as string,
    });
    await expectError(await api.post('/auth/passkey/login/verify', { response: fresh }), 401, 'INVALID_CHALLENGE');
    // A challenge we never issued.
    await expectError(
      await api.post('/auth/passkey/login/verify', { response: device.get(await loginOptions(), { challenge: 'bm90LW91cnM' }) }),
      401,
      'INVALID_CHALLENGE',
    );
  });

  it('a challenge lives 5 minutes', async () => {
    const pair = await api.email(uniqueEmail('expiry'));
    const device = new SoftAuthenticator(FRONTEND);
    await register(pair, device);
    const options = await loginOptions();
    await account.services.store.db.webauthnChallenge.update({ where: { challenge: options.challenge }, data: { expiresAt: new Date(Date.now() - 1) } });
    await expectError(await api.post('/auth/passkey/login/verify', { response: device.get(options) }), 401, 'INVALID_CHALLENGE');
  });

  it('a registration challenge belongs to the account that asked for it', async () => {
    const alice = await api.email(uniqueEmail('alice-reg'));
    const bob = await api.email(uniqueEmail('bob-reg'));
    const response = new SoftAuthenticator(FRONTEND).create(await registerOptions(alice));
    await expectError(await api.post('/auth/passkey/register/verify', { response }, bearer(bob)), 401, 'INVALID_CHALLENGE');
    expect((await identities(bob)).map((i) => i.method)).toEqual(['email']);
    await expectError(await api.post('/auth/passkey/register/verify', { response }), 401, 'MISSING_TOKEN');
    await expectError(await api.post('/auth/passkey/register/options', {}), 401, 'MISSING_TOKEN');
  });

  it('a response from another origin or for another relying party id is 401 INVALID_PASSKEY, on registration and sign-in', async () => {
    const pair = await api.email(uniqueEmail('origin'));
    await expectError(await register(pair, new SoftAuthenticator('http://evil.test:8080')), 401, 'INVALID_PASSKEY');
    await expectError(await register(pair, new SoftAuthenticator(FRONTEND), undefined, { rpId: 'evil.test' }), 401, 'INVALID_PASSKEY');
    expect((await identities(pair)).map((i) => i.method)).toEqual(['email']);

    const device = new SoftAuthenticator(FRONTEND);
    expect((await register(pair, device)).status).toBe(200);
    await expectError(await login(device, { origin: 'http://evil.test:8080' }), 401, 'INVALID_PASSKEY');
    await expectError(await login(device, { rpId: 'evil.test' }), 401, 'INVALID_PASSKEY');
    expect((await login(device)).status).toBe(200);
  });

  it('a signature counter that does not grow (a cloned authenticator) is 401', async () => {
    const pair = await api.email(uniqueEmail('counter'));
    const device = new SoftAuthenticator(FRONTEND);
    await register(pair, device, 'Counting', { counter: 5 });
    expect((await login(device, { counter: 10 })).status).toBe(200);
    await expectError(await login(device, { counter: 10 }), 401, 'INVALID_PASSKEY');
    await expectError(await login(device, { counter: 3 }), 401, 'INVALID_PASSKEY');
    expect((await login(device, { counter: 11 })).status).toBe(200);
  });

  it("linking: another account's passkey is 409 IDENTITY_IN_USE; an unlinked passkey no longer signs in", async () => {
    const alice = await api.email(uniqueEmail('alice-link'));
    const bob = await api.email(uniqueEmail('bob-link'));
    const bobDevice = new SoftAuthenticator(FRONTEND);
    await register(bob, bobDevice, 'Bob');
    await expectError(await login(bobDevice, {}, bearer(alice)), 409, 'IDENTITY_IN_USE');
    expect((await identities(alice)).map((i) => i.method)).toEqual(['email']);

    const passkey = (await identities(bob)).find((i) => i.method === 'passkey')!;
    expect((await api.del(`/account/identities/${passkey.id}`, bearer(bob))).status).toBe(204);
    await expectError(await login(bobDevice), 401, 'INVALID_PASSKEY');
  });

  it('is in the OpenAPI document', async () => {
    const doc = (await (await fetch(`${account.url}/api/v1/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
    for (const path of ['/auth/passkey/register/options', '/auth/passkey/register/verify', '/auth/passkey/login/options', '/auth/passkey/login/verify'])
      expect(Object.keys(doc.paths[path] ?? {})).toEqual(['post']);
    expect(Object.keys(doc.paths['/account/passkeys/{id}'] ?? {})).toEqual(['patch']);
  });
});
