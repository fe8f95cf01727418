/**
 * Who may call the admin API, over real HTTP: the admin role is read from the store on every
 * call (a revoke bites on the next call, whatever token the former admin holds); API keys work
 * only within their scopes and never on user endpoints; revoked and expired keys, normal users,
 * guests and expired tokens are refused, and each refusal is counted; ADMIN_EMAILS and the
 * command line make admins.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SYSTEM_ACTOR } from '../../server/account/events/audit.js';
import { setRole } from '../../server/account/users/roles.js';
import { bearer, uniqueEmail } from '../support/account-api.js';
import { enrolTotp } from '../support/authenticator.js';
import { adminApi, adminCli, expectError } from '../support/admin-api.js';
import { postgresReachable } from '../support/postgres.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';

async function refusals(account: TestAccount): Promise<number> {
  const text = await (await fetch(`${account.url}/metrics`)).text();
  return [...text.matchAll(/^admin_refusals_total\{[^}]*\} (\d+)/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
}

describe('admin access', () => {
  let account: TestAccount;
  let api: ReturnType<typeof adminApi>;
  const listed = uniqueEmail('listed');

  beforeAll(async () => {
    account = await startTestAccount('pglite', { ADMIN_EMAILS: ` ${listed.toUpperCase()} , other@example.com` });
    api = adminApi(account);
  });
  afterAll(() => account?.stop());

  it('refuses no credentials with 401, a normal user, a guest and an expired token, and counts each refusal', async () => {
    const before = await refusals(account);
    await expectError(await api.get('/admin/audit'), 401, 'MISSING_TOKEN');
    const user = await api.email(uniqueEmail('plain'));
    await expectError(await api.get('/admin/audit', bearer(user)), 403, 'FORBIDDEN');
    await expectError(await api.get('/admin/audit', bearer(await api.guest())), 403, 'FORBIDDEN');
    const admin = await api.newAdmin();
    await expectError(await api.get('/admin/audit', await api.expiredToken(admin.pair)), 401, 'TOKEN_EXPIRED');
    expect(await refusals(account)).toBe(before + 4);
  });

  it('revoking the admin role stops the same access token at the very next call', async () => {
    const admin = await api.newAdmin();
    const other = await api.newAdmin();
    expect((await api.get('/admin/audit', admin.headers)).status).toBe(200);
    expect((await api.post(`/admin/users/${admin.userId}/role`, { admin: false }, other.headers)).status).toBe(204);
    await expectError(await api.get('/admin/audit', admin.headers), 403, 'FORBIDDEN');
  });

  it('an admin cannot demote themselves', async () => {
    const admin = await api.newAdmin();
    await expectError(await api.post(`/admin/users/${admin.userId}/role`, { admin: false }, admin.headers), 409, 'SELF_ACTION');
  });

  it('an API key works within its scopes only, never on user endpoints, never to manage keys or roles', async () => {
    const admin = await api.newAdmin();
    const auditor = await api.newKey(admin, ['audit:read']);
    expect(auditor.key).toMatch(/^ak_[0-9a-f]{24}_[\w-]{43}$/);
    expect((await api.get('/admin/audit', auditor.headers)).status).toBe(200);
    const reader = await api.newKey(admin, ['users:read']);
    await expectError(await api.get('/admin/audit', reader.headers), 403, 'FORBIDDEN');
    await expectError(await api.get('/admin/keys', auditor.headers), 403, 'FORBIDDEN');
    await expectError(await api.post('/admin/keys', { name: 'escalate', scopes: ['audit:read'] }, auditor.headers), 403, 'FORBIDDEN');
    await expectError(await api.post(`/admin/users/${admin.userId}/role`, { admin: true }, auditor.headers), 403, 'FORBIDDEN');
    await expectError(await api.get('/account', auditor.headers), 401, 'MISSING_TOKEN');
    await expectError(await api.get('/auth/me', auditor.headers), 401, 'MISSING_TOKEN');
    // The list never shows a secret, and the stored row holds only its digest.
    const listedKeys = await api.json<{ keys: Array<Record<string, unknown>> }>(await api.get('/admin/keys', admin.headers));
    expect(JSON.stringify(listedKeys)).not.toContain(auditor.key.slice(28));
    const row = await account.services.store.db.apiKey.findUniqueOrThrow({ where: { id: auditor.id } });
    expect(row.secretHash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(row)).not.toContain(auditor.key.slice(28));
    expect(row.lastUsedAt).not.toBeNull();
  });

  it('a revoked key, an expired key and a forged secret are refused with 401 INVALID_API_KEY', async () => {
    const admin = await api.newAdmin();
    const key = await api.newKey(admin, ['audit:read']);
    const forged = `${key.key.slice(0, 28)}${'A'.repeat(43)}`;
    await expectError(await api.get('/admin/audit', { authorization: `Bearer ${forged}` }), 401, 'INVALID_API_KEY');
    expect((await api.del(`/admin/keys/${key.id}`, admin.headers)).status).toBe(204);
    await expectError(await api.get('/admin/audit', key.headers), 401, 'INVALID_API_KEY');
    await expectError(await api.del(`/admin/keys/${key.id}`, admin.headers), 404, 'API_KEY_NOT_FOUND');
    const shortLived = await api.newKey(admin, ['audit:read'], { expires_at: new Date(Date.now() + 1500).toISOString() });
    expect((await api.get('/admin/audit', shortLived.headers)).status).toBe(200);
    await expect.poll(async () => (await api.get('/admin/audit', shortLived.headers)).status, { timeout: 10_000, interval: 250 }).toBe(401);
  });

  it('ADMIN_EMAILS makes an admin of a listed verified address when it signs up (whose role works once a second factor is passed)', async () => {
    const pair = await api.email(listed);
    await expectError(await api.get('/admin/audit', bearer(pair)), 403, 'MFA_REQUIRED');
    await enrolTotp(api, pair);
    expect((await api.get('/admin/audit', bearer(pair))).status).toBe(200);
    const { user_id } = await api.me(pair);
    const rows = await account.services.store.db.auditEvent.findMany({ where: { targetId: user_id, action: 'user.grant_admin' } });
    expect(rows).toMatchObject([{ actorType: 'system', actorLabel: 'ADMIN_EMAILS' }]);
  });
});

describe.runIf(await postgresReachable())('npm run admin on PostgreSQL while the service runs', () => {
  let account: TestAccount;
  let api: ReturnType<typeof adminApi>;

  beforeAll(async () => {
    account = await startTestAccount('postgres');
    api = adminApi(account);
  });
  afterAll(() => account?.stop());

  const cli = (...args: string[]) => adminCli(account, ...args);

  it('grant, key create and revoke work on the running service, and are audited as the command line', async () => {
    const email = uniqueEmail('cli');
    const pair = await api.email(email);
    await enrolTotp(api, pair);
    await expectError(await api.get('/admin/audit', bearer(pair)), 403, 'FORBIDDEN');
    await cli('grant', email);
    expect((await api.get('/admin/audit', bearer(pair))).status).toBe(200);
    const { stdout } = await cli('key', 'create', '--name', 'backend', '--scopes', 'audit:read,users:read');
    const key = /ak_[0-9a-f]{24}_[\w-]{43}/.exec(stdout)?.[0];
    expect(key).toBeDefined();
    expect((await api.get('/admin/audit', { authorization: `Bearer ${key}` })).status).toBe(200);
    // Another admin (made as ADMIN_EMAILS would), so that this one is not the last (409 LAST_ADMIN).
    const { user_id: keeper } = await api.me(await api.email(uniqueEmail('keeper')));
    await setRole(account.services.store.db, keeper, 'admin', SYSTEM_ACTOR);
    await cli('revoke', email);
    await expectError(await api.get('/admin/audit', bearer(pair)), 403, 'FORBIDDEN');
    const { events } = await api.json<{ events: Array<{ action: string; actor: { type: string } }> }>(
      await api.get('/admin/audit?limit=10', { authorization: `Bearer ${key}` }),
    );
    expect(events.filter((e) => e.actor.type === 'cli').map((e) => e.action)).toEqual(['user.revoke_admin', 'key.create', 'user.grant_admin']);
  }, 180_000);
});
