/**
 * What the second factor means for operators, and its brute-force bound, over real HTTP with
 * oathtool's codes:
 * - ADMIN_REQUIRE_2FA (default on): the admin role works only in `aal2` sessions; an admin without
 *   a factor gets 403 MFA_REQUIRED on admin routes but can enrol, and the enrolling session then
 *   works; an admin's first-factor sign-in must pass the second step; API keys are unaffected;
 *   with ADMIN_REQUIRE_2FA=0 any session of an admin works;
 * - 5 wrong codes per account per 15 minutes, whatever the client, then 429 MFA_CODE_ENTRY_PAUSED
 *   with Retry-After — even for the right code; another account is not affected; a right code
 *   gives its try back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, uniqueEmail, type Pair } from '../support/account-api.js';
import { adminApi, expectError } from '../support/admin-api.js';
import { enrolTotp, totpCode } from '../support/authenticator.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';

describe('the admin role needs a second factor (ADMIN_REQUIRE_2FA, default on)', () => {
  let account: TestAccount;
  let api: ReturnType<typeof adminApi>;

  beforeAll(async () => {
    account = await startTestAccount('pglite');
    api = adminApi(account);
  });
  afterAll(async () => {
    await account.stop();
  });

  it('an admin without a factor is refused on admin routes, enrols, and the enrolling session then works', async () => {
    const admin = await api.newAdmin('no-factor', { secondFactor: false });
    await expectError(await api.get('/admin/users', admin.headers), 403, 'MFA_REQUIRED');
    await expectError(await api.post('/admin/keys', { name: 'k', scopes: ['users:read'] }, admin.headers), 403, 'MFA_REQUIRED');
    // Everything else of the account still works, enrolment included.
    expect((await api.get('/account', admin.headers)).status).toBe(200);
    await enrolTotp(api, admin.pair);
    expect((await api.get('/admin/users', admin.headers)).status).toBe(200);
  });

  it("an admin's first-factor sign-in passes the second step before admin routes; API keys need none", async () => {
    const admin = await api.newAdmin('two-step');
    const key = await api.newKey(admin, ['users:read']);
    const first = await api.email(admin.email);
    await expectError(await api.get('/admin/users', bearer(first)), 403, 'MFA_REQUIRED');
    const passed = await api.json<Pair>(await api.post('/auth/mfa/verify', { code: await totpCode(admin.secret!, { steps: 1 }) }, bearer(first)));
    expect((await api.get('/admin/users', bearer(passed))).status).toBe(200);
    expect((await api.get('/admin/users', key.headers)).status).toBe(200);
  });

  it('a user who passed a second factor is still no admin (403 FORBIDDEN)', async () => {
    const pair = await api.email(uniqueEmail('plain'));
    await enrolTotp(api, pair);
    await expectError(await api.get('/admin/users', bearer(pair)), 403, 'FORBIDDEN');
  });
});

describe('wrong codes are bounded per account; ADMIN_REQUIRE_2FA=0', () => {
  let account: TestAccount;
  let api: ReturnType<typeof adminApi>;
  /** Each call from another client address (TRUST_PROXY=loopback): the bound is the account's, not the client's. */
  let client = 0;
  const from = () => ({ 'x-forwarded-for': `203.0.113.${++client}` });
  const verify = (pair: Pair, code: string) => api.post('/auth/mfa/verify', { code }, bearer(pair, from()));
  const wrong = (code: string) => String((Number(code) + 500_000) % 1_000_000).padStart(6, '0');

  beforeAll(async () => {
    account = await startTestAccount('pglite', { RATE_LIMIT_MULTIPLIER: '1', TRUST_PROXY: 'loopback', ADMIN_REQUIRE_2FA: '0' });
    api = adminApi(account);
  });
  afterAll(async () => {
    await account.stop();
  });

  it('5 wrong codes, then 429 MFA_CODE_ENTRY_PAUSED with Retry-After for any code from any client; another account is unaffected', async () => {
    const email = uniqueEmail('locked');
    const owner = await api.email(email, from());
    const { secret } = await enrolTotp(api, owner);
    const attacker = await api.email(email, from());
    const right = await totpCode(secret, { steps: 1 });
    for (let i = 0; i < 5; i++) await expectError(await verify(attacker, wrong(right)), 401, 'INVALID_CODE');
    const paused = await verify(attacker, right);
    expect(paused.status).toBe(429);
    expect(((await paused.json()) as { code: string }).code).toBe('MFA_CODE_ENTRY_PAUSED');
    const retryAfter = Number(paused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(800);
    expect(retryAfter).toBeLessThanOrEqual(900);
    // The owner's own new sign-in waits too: the bound is the account's.
    await expectError(await verify(await api.email(email, from()), right), 429, 'MFA_CODE_ENTRY_PAUSED');

    const otherEmail = uniqueEmail('other');
    const other = await enrolTotp(api, await api.email(otherEmail, from()));
    const otherFirst = await api.email(otherEmail, from());
    // 4 wrong, a right one (given back), then a wrong one is still only wrong: right codes do not count.
    const otherRight = await totpCode(other.secret, { steps: 1 });
    for (let i = 0; i < 4; i++) await expectError(await verify(otherFirst, wrong(otherRight)), 401, 'INVALID_CODE');
    expect((await verify(otherFirst, otherRight)).status).toBe(200);
    await expectError(await verify(await api.email(otherEmail, from()), wrong(otherRight)), 401, 'INVALID_CODE');
  });

  it('with ADMIN_REQUIRE_2FA=0 an admin without a factor works', async () => {
    const admin = await api.newAdmin('no-2fa', { secondFactor: false });
    expect((await api.get('/admin/users', bearer(admin.pair, from()))).status).toBe(200);
  });
});
