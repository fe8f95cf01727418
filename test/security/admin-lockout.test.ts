/**
 * A support key cannot lock every admin out (fourth security review, Medium): an API key with
 * `users:write` banned an admin (204; the admin's token then 401, their sign-in 403 USER_BANNED),
 * and `npm run admin` had no way to lift a ban. Now (server/account/users/roles.ts): a key acting
 * on an account that holds the admin role is 403 FORBIDDEN, whatever its scopes; the last admin
 * who is not banned cannot be banned, deleted (by an admin or by themselves) or demoted (409
 * LAST_ADMIN), even by two admins banning each other at once; `npm run admin -- unban` lets a
 * banned admin back in. Real HTTP to a real account service, on PGlite and PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AdminCaller } from '../../server/account/admin/access.js';
import { CLI_ACTOR } from '../../server/account/events/audit.js';
import { setRole } from '../../server/account/users/roles.js';
import { banUser } from '../../server/account/admin/users.js';
import { bearer, uniqueEmail } from '../support/account-api.js';
import { type Admin, adminApi, adminCli, expectError } from '../support/admin-api.js';
import { postgresReachable } from '../support/postgres.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';

const stores = (await postgresReachable()) ? (['pglite', 'postgres'] as const) : (['pglite'] as const);

describe.each(stores)('admins are guarded (%s)', (kind) => {
  let account: TestAccount;
  let api: ReturnType<typeof adminApi>;

  beforeAll(async () => {
    account = await startTestAccount(kind);
    api = adminApi(account);
  });
  afterAll(() => account?.stop());

  /** Leaves exactly `admins` as the accounts holding the role. */
  async function onlyAdmins(...admins: Admin[]): Promise<void> {
    await account.services.store.db.user.updateMany({ where: { role: 'admin', id: { notIn: admins.map((a) => a.userId) } }, data: { role: 'user' } });
  }

  const callerOf = (admin: Admin): AdminCaller => ({ actor: { type: 'user', id: admin.userId, label: null }, adminUserId: admin.userId, ip: '127.0.0.1' });

  it("an API key with every user and agent scope cannot ban, unban, delete, edit, end the sessions of or stop the agent of an admin (403), and the admin's token keeps working", async () => {
    const owner = await api.newAdmin('owner');
    const admin = await api.newAdmin('target');
    const support = await api.newKey(owner, ['users:read', 'users:write', 'agents:read', 'agents:write', 'audit:read']);
    const attempts: Array<[string, string, unknown]> = [
      ['POST', `/admin/users/${admin.userId}/ban`, { reason: 'lockout' }],
      ['POST', `/admin/users/${admin.userId}/unban`, undefined],
      ['POST', `/admin/users/${admin.userId}/sessions/revoke`, undefined],
      ['PATCH', `/admin/users/${admin.userId}`, { metadata: { plan: 'x' } }],
      ['DELETE', `/admin/users/${admin.userId}`, undefined],
      ['POST', `/admin/agents/${admin.userId}/stop`, undefined],
      ['POST', `/admin/agents/${admin.userId}/restart`, undefined],
    ];
    for (const [method, path, body] of attempts) {
      const res = await api.call(method, path, support.headers, body);
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(((await res.json()) as { code: string }).code).toBe('FORBIDDEN');
    }
    expect((await api.get('/admin/audit', admin.headers)).status).toBe(200);
    const row = await account.services.store.db.user.findUniqueOrThrow({ where: { id: admin.userId } });
    expect(row).toMatchObject({ bannedAt: null, role: 'admin' });
    expect(await api.email(row.email as string)).toHaveProperty('access_token');
    // The same key still does its job on everyone else.
    const user = await api.email(uniqueEmail('plain'));
    const { user_id } = await api.me(user);
    expect((await api.post(`/admin/users/${user_id}/ban`, { reason: 'spam' }, support.headers)).status).toBe(204);
  });

  it('the last admin cannot be demoted (command line included) or delete their own account: 409 LAST_ADMIN', async () => {
    const first = await api.newAdmin('first');
    const second = await api.newAdmin('second');
    await onlyAdmins(first, second);
    // With another admin left, a demotion works.
    expect((await api.post(`/admin/users/${second.userId}/role`, { admin: false }, first.headers)).status).toBe(204);
    // Now `first` is the last: nobody may take the role away, and their own deletion would leave no admin.
    await expect(setRole(account.services.store.db, first.userId, 'user', CLI_ACTOR)).rejects.toMatchObject({ appCode: 'LAST_ADMIN' });
    await expectError(await api.del('/account', first.headers), 409, 'LAST_ADMIN');
    expect((await api.get('/admin/audit', first.headers)).status).toBe(200);
    // With a second admin again, the first may go.
    const third = await api.newAdmin('third');
    expect((await api.del('/account', first.headers)).status).toBe(204);
    expect((await api.get('/admin/audit', third.headers)).status).toBe(200);
  });

  it('a banned admin does not count: the only other admin cannot be demoted or delete their account', async () => {
    const keeper = await api.newAdmin('keeper');
    const banned = await api.newAdmin('banned');
    await onlyAdmins(keeper, banned);
    expect((await api.post(`/admin/users/${banned.userId}/ban`, { reason: 'left' }, keeper.headers)).status).toBe(204);
    await expect(setRole(account.services.store.db, keeper.userId, 'user', CLI_ACTOR)).rejects.toMatchObject({ appCode: 'LAST_ADMIN' });
    await expectError(await api.del('/account', keeper.headers), 409, 'LAST_ADMIN');
    expect((await api.get('/admin/audit', keeper.headers)).status).toBe(200);
  });

  it('two admins banning each other at once leave one of them an admin', async () => {
    const a = await api.newAdmin('mutual-a');
    const b = await api.newAdmin('mutual-b');
    await onlyAdmins(a, b);
    const results = await Promise.allSettled([
      banUser(account.services, callerOf(a), b.userId, 'race', null),
      banUser(account.services, callerOf(b), a.userId, 'race', null),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(results.find((r) => r.status === 'rejected')).toMatchObject({ reason: { appCode: 'LAST_ADMIN' } });
    const active = await account.services.store.db.user.count({ where: { role: 'admin', bannedAt: null } });
    expect(active).toBe(1);
  });

  it.runIf(kind === 'postgres')(
    'npm run admin -- unban lets a banned admin sign in again, with the service running',
    async () => {
      const keeper = await api.newAdmin('cli-keeper');
      const email = uniqueEmail('cli-banned');
      const pair = await api.email(email);
      const { user_id } = await api.me(pair);
      expect((await api.post(`/admin/users/${user_id}/ban`, { reason: 'mistake' }, keeper.headers)).status).toBe(204);
      const refused = await api.call('POST', '/auth/verify-magic-link', {}, { email, code: (await account.services.email.request(email)).code });
      expect(refused.status).toBe(403);
      const { stdout } = await adminCli(account, 'unban', email);
      expect(stdout).toContain('can sign in again');
      expect((await api.get('/auth/me', bearer(await api.email(email)))).status).toBe(200);
      const audit = await account.services.store.db.auditEvent.findMany({ where: { targetId: user_id, action: 'user.unban' } });
      expect(audit).toMatchObject([{ actorType: 'cli' }]);
    },
    180_000,
  );
});
