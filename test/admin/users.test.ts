/**
 * The admin API over real HTTP against a real account service with local agents: every admin
 * route refuses a normal user, a guest, an expired token, a revoked key and a key without its
 * scope; ban → sign-in 403 USER_BANNED with the expiry, sessions ended, agent stopped → unban
 * restores sign-in; delete as self-deletion does, agent included; user list pages stay stable
 * while users sign up concurrently; search, filters, metadata in the token, overrides; and an
 * audit row for every admin action made in this file.
 */
import type { LocalProvisioner } from '../../server/account/agents/provisioners/local/provisioner.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { clearOfMidnightUtc, MIDNIGHT_MARGIN_MS } from '../support/clock.js';
import { bearerTrpcClient } from '../../server/account/agents/client.js';
import type { AccountRouter } from '../../server/account/router.js';
import { bearer, newWallet, uniqueEmail } from '../support/account-api.js';
import { adminApi, expectError, type Admin } from '../support/admin-api.js';
import { startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';

interface UsersPage {
  users: Array<{ id: string; email: string | null; guest: boolean; admin: boolean; ban: { reason: string; expires_at: string | null } | null }>;
  next_cursor: string | null;
}

// Daily figures are filled and read back: no test straddles midnight UTC (support/clock.ts).
beforeEach(() => clearOfMidnightUtc(), MIDNIGHT_MARGIN_MS + 5_000);
describe('admin API', () => {
  let account: TestAccount;
  let model: ScriptedModel;
  let api: ReturnType<typeof adminApi>;
  let admin: Admin;
  const savedModel = process.env.MODEL;
  /** Admin calls made in this file that change something, to find in the audit log at the end. */
  const changes: Array<{ action: string; target: string }> = [];

  beforeAll(async () => {
    model = await startScriptedModel({ responder: () => ({ text: 'ok' }) });
    process.env.MODEL = model.modelSpec;
    account = await startTestAccount('pglite', { AGENT_PROVISIONER: 'local', AGENT_IDLE_TIMEOUT: '0', MODEL: model.modelSpec, TOKEN_METADATA_CLAIM: 'org' });
    api = adminApi(account);
    admin = await api.newAdmin();
  });
  afterAll(async () => {
    await account?.stop();
    await model?.close();
    if (savedModel === undefined) delete process.env.MODEL;
    else process.env.MODEL = savedModel;
  });

  it('every admin route refuses a normal user, a guest, an expired token, a revoked key and a key without its scope', async () => {
    const doc = await api.json<{ paths: Record<string, Record<string, unknown>> }>(await api.get('/openapi.json'));
    const routes = Object.entries(doc.paths)
      .filter(([path]) => path.startsWith('/admin'))
      .flatMap(([path, methods]) =>
        Object.keys(methods).map((method) => ({ method: method.toUpperCase(), path: path.replace(/\{[^}]+\}/g, '00000000-0000-4000-8000-000000000000') })),
      );
    expect(routes.length).toBeGreaterThanOrEqual(15);
    const user = bearer(await api.email(uniqueEmail('plain')));
    const guest = bearer(await api.guest());
    const expired = await api.expiredToken(admin.pair);
    const revoked = await api.newKey(admin, ['users:read', 'users:write', 'agents:read', 'agents:write', 'webhooks:write', 'audit:read']);
    expect((await api.del(`/admin/keys/${revoked.id}`, admin.headers)).status).toBe(204);
    changes.push({ action: 'key.revoke', target: revoked.id });
    const auditOnly = await api.newKey(admin, ['audit:read']);
    const webhooksOnly = await api.newKey(admin, ['webhooks:write']);
    for (const { method, path } of routes) {
      const body = method === 'GET' || method === 'DELETE' ? undefined : {};
      const status = async (headers: Record<string, string>) => (await api.call(method, path, headers, body)).status;
      const where = `${method} ${path}`;
      expect({ where, status: await status(user) }).toEqual({ where, status: 403 });
      expect({ where, status: await status(guest) }).toEqual({ where, status: 403 });
      expect({ where, status: await status(expired) }).toEqual({ where, status: 401 });
      expect({ where, status: await status(revoked.headers) }).toEqual({ where, status: 401 });
      expect({ where, status: await status({}) }).toEqual({ where, status: 401 });
      // No route takes both scopes: one of the two keys lacks the route's.
      expect({ where, refused: [await status(auditOnly.headers), await status(webhooksOnly.headers)].includes(403) }).toEqual({ where, refused: true });
    }
  });

  it('ban: sign-in answers 403 USER_BANNED with the expiry, sessions end, the agent stops; unban restores sign-in', async () => {
    const email = uniqueEmail('banned');
    const pair = await api.email(email);
    const { user_id: userId } = await api.me(pair);
    expect((await api.get('/agent/health', bearer(pair))).status).toBe(200);
    const provisioner = account.services.agents.provisioner as LocalProvisioner;
    const agent = await account.services.agents.registry.forUser(userId);
    const pid = provisioner.processes().find((p) => p.agentId === agent?.id)?.pid;
    expect(pid).toEqual(expect.any(Number));

    const until = new Date(Date.now() + 3_600_000).toISOString();
    expect((await api.post(`/admin/users/${userId}/ban`, { reason: 'spam', expires_at: until }, admin.headers)).status).toBe(204);
    changes.push({ action: 'user.ban', target: userId });
    await expectError(await api.get('/auth/me', bearer(pair)), 401, 'SESSION_REVOKED');
    await expectError(await api.post('/auth/refresh', { refresh_token: pair.refresh_token }), 401, 'INVALID_REFRESH_TOKEN');
    expect(provisioner.processes().find((p) => p.agentId === agent?.id)).toBeUndefined();
    expect(() => process.kill(pid as number, 0)).toThrow();
    const refused = await api.post('/auth/verify-magic-link', { email, code: (await account.services.email.request(email)).code });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ code: 'USER_BANNED', expires_at: until });
    const banned = await api.json<UsersPage>(await api.get(`/admin/users?filter=banned&query=${encodeURIComponent(email)}`, admin.headers));
    expect(banned.users).toMatchObject([{ id: userId, ban: { reason: 'spam' } }]);

    expect((await api.post(`/admin/users/${userId}/unban`, {}, admin.headers)).status).toBe(204);
    changes.push({ action: 'user.unban', target: userId });
    const again = await api.email(email);
    expect((await api.me(again)).user_id).toBe(userId);
    expect((await api.get('/agent/health', bearer(again))).status).toBe(200);
  });

  it('a banned guest device is refused too, and an admin cannot ban themselves', async () => {
    const deviceId = `device-${Date.now()}-banned-guest`;
    const pair = await api.json<{ access_token: string; refresh_token: string }>(await api.post('/auth/guest', { device_id: deviceId }));
    const { user_id: userId } = await api.me(pair as never);
    expect((await api.post(`/admin/users/${userId}/ban`, { reason: 'abuse' }, admin.headers)).status).toBe(204);
    changes.push({ action: 'user.ban', target: userId });
    const refused = await api.post('/auth/guest', { device_id: deviceId });
    expect(await refused.json()).toMatchObject({ code: 'USER_BANNED', expires_at: null });
    await expectError(await api.post(`/admin/users/${admin.userId}/ban`, { reason: 'oops' }, admin.headers), 409, 'SELF_ACTION');
    await expectError(await api.del(`/admin/users/${admin.userId}`, admin.headers), 409, 'SELF_ACTION');
  });

  it('delete removes the user as their own deletion does, agent and workspace included', async () => {
    const pair = await api.email(uniqueEmail('deleted'));
    const { user_id: userId } = await api.me(pair);
    expect((await api.get('/agent/health', bearer(pair))).status).toBe(200);
    const agent = await account.services.agents.registry.forUser(userId);
    const key = await api.newKey(admin, ['users:write', 'users:read']);
    expect((await api.del(`/admin/users/${userId}`, key.headers)).status).toBe(204);
    changes.push({ action: 'user.delete', target: userId });
    expect(await account.services.store.db.user.count({ where: { id: userId } })).toBe(0);
    expect(await account.services.agents.registry.forUser(userId)).toBeUndefined();
    expect((account.services.agents.provisioner as LocalProvisioner).processes().find((p) => p.agentId === agent?.id)).toBeUndefined();
    await expectError(await api.get('/auth/me', bearer(pair)), 401, 'SESSION_REVOKED');
    await expectError(await api.get(`/admin/users/${userId}`, key.headers), 404, 'ACCOUNT_NOT_FOUND');
  });

  it('user detail, search by wallet and id, metadata in the access token, overrides, revoke sessions, invite', async () => {
    const wallet = newWallet();
    const pair = await api.wallet(wallet);
    const { user_id: userId } = await api.me(pair);
    for (const query of [wallet.address, wallet.address.toLowerCase(), userId]) {
      const page = await api.json<UsersPage>(await api.get(`/admin/users?query=${query}`, admin.headers));
      expect(page.users.map((u) => u.id)).toEqual([userId]);
    }
    const patched = await api.json<{ metadata: unknown; overrides: unknown }>(
      await api.patch(`/admin/users/${userId}`, { metadata: { plan: 'pro' }, model_daily_tokens: 5, guest_messages_per_day: 3 }, admin.headers),
    );
    changes.push({ action: 'user.update', target: userId });
    expect(patched).toMatchObject({ metadata: { plan: 'pro' }, overrides: { model_daily_tokens: 5, guest_messages_per_day: 3 } });
    const detail = await api.json<{ identities: unknown[]; sessions: unknown[]; usage: { model_tokens_limit: number } }>(
      await api.get(`/admin/users/${userId}`, admin.headers),
    );
    expect(detail.identities).toHaveLength(1);
    expect(detail.sessions).toHaveLength(1);
    expect(detail.usage.model_tokens_limit).toBe(5);
    // TOKEN_METADATA_CLAIM=org: the next token carries the metadata.
    const refreshed = await api.json<{ access_token: string }>(await api.post('/auth/refresh', { refresh_token: pair.refresh_token }));
    expect(JSON.parse(Buffer.from(refreshed.access_token.split('.')[1] as string, 'base64url').toString())).toMatchObject({ org: { plan: 'pro' } });

    expect((await api.post(`/admin/users/${userId}/sessions/revoke`, {}, admin.headers)).status).toBe(204);
    changes.push({ action: 'user.revoke_sessions', target: userId });
    await expectError(await api.get('/auth/me', { authorization: `Bearer ${refreshed.access_token}` }), 401, 'SESSION_REVOKED');

    const invited = uniqueEmail('invited');
    const created = await api.json<{ id: string; email: string; guest: boolean }>(await api.post('/admin/users', { email: invited }, admin.headers));
    changes.push({ action: 'user.invite', target: created.id });
    expect(created).toMatchObject({ email: invited, guest: false });
    expect((await api.me(await api.email(invited))).user_id).toBe(created.id);
    await expectError(await api.post('/admin/users', { email: invited }, admin.headers), 409, 'CONFLICT');
  });

  it('a guest quota override applies to that guest only', async () => {
    const guest = await api.guest();
    const { user_id: userId } = await api.me(guest);
    await api.patch(`/admin/users/${userId}`, { guest_messages_per_day: 0 }, admin.headers);
    changes.push({ action: 'user.update', target: userId });
    await expectError(
      await api.call('POST', '/agent/chat', { ...bearer(guest), 'content-type': 'application/json' }, { message: 'hi', chat_id: 'c1' }),
      429,
      'GUEST_QUOTA',
    );
  });

  it('usage per day counts admitted chat messages (REST and tRPC) and accepted uploads, not refused ones', async () => {
    const guest = await api.guest();
    const { user_id: userId } = await api.me(guest);
    await api.patch(`/admin/users/${userId}`, { guest_messages_per_day: 2 }, admin.headers);
    changes.push({ action: 'user.update', target: userId });
    const chat = (chatId: string) =>
      api.call('POST', '/agent/chat', { ...bearer(guest), 'content-type': 'application/json' }, { message: 'hi', chat_id: chatId });
    const first = await chat('u1');
    expect(first.status).toBe(200);
    expect(await first.text()).toContain('"type":"done"');
    const trpc = bearerTrpcClient<AccountRouter>(`${account.url}/trpc`, () => `Bearer ${guest.access_token}`);
    await trpc.agent.chat.start.mutate({ message: 'hi again', chat_id: 'u2' });
    // Over the guest quota: refused before it counts.
    await expectError(await chat('u3'), 429, 'GUEST_QUOTA');
    const upload = (bytes: number) => {
      const form = new FormData();
      form.set('file', new Blob([new Uint8Array(bytes)]), 'note.bin');
      return fetch(`${account.url}/api/v1/agent/files/upload`, { method: 'POST', headers: bearer(guest), body: form });
    };
    expect((await upload(1024)).status).toBe(200);
    // Over the guest's 5 MB: refused, not an upload.
    expect((await upload(5 * 1024 * 1024 + 10)).status).toBe(413);

    const today = new Date().toISOString().slice(0, 10);
    const { usage } = await api.json<{ usage: Array<{ user_id: string; day: string; messages: number; uploads: number }> }>(
      await api.get(`/admin/agents/usage?user_id=${userId}&days=1`, admin.headers),
    );
    expect(usage).toEqual([expect.objectContaining({ user_id: userId, day: today, messages: 2, uploads: 1 })]);
    const detail = await api.json<{ usage: { today: { messages: number; uploads: number }; last_30_days: { messages: number; uploads: number } } }>(
      await api.get(`/admin/users/${userId}`, admin.headers),
    );
    expect(detail.usage.today).toMatchObject({ messages: 2, uploads: 1 });
    expect(detail.usage.last_30_days).toMatchObject({ messages: 2, uploads: 1 });
  });

  it('the usage views split model tokens by source: chat, heartbeat, task, subagent', async () => {
    const guest = await api.guest();
    const { user_id: userId } = await api.me(guest);
    const budget = account.services.modelBudget;
    const today = new Date().toISOString().slice(0, 10);
    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    await budget.record(userId, { tokensIn: 100, tokensOut: 10 }, true, today, 'chat');
    await budget.record(userId, { tokensIn: 20, tokensOut: 2 }, true, today, 'heartbeat');
    await budget.record(userId, { tokensIn: 30, tokensOut: 3 }, true, today, 'task');
    await budget.record(userId, { tokensIn: 40, tokensOut: 4 }, true, yesterday, 'subagent');
    const { usage } = await api.json<{ usage: Array<{ day: string; by_source: Record<string, number> }> }>(
      await api.get(`/admin/agents/usage?user_id=${userId}&days=2`, admin.headers),
    );
    expect(usage.map((row) => [row.day, row.by_source])).toEqual([
      [today, { chat: 110, heartbeat: 22, task: 33, subagent: 0 }],
      [yesterday, { chat: 0, heartbeat: 0, task: 0, subagent: 44 }],
    ]);
    const detail = await api.json<{ usage: Record<'today' | 'last_30_days', { tokens_in: number; tokens_out: number; by_source: Record<string, number> }> }>(
      await api.get(`/admin/users/${userId}`, admin.headers),
    );
    expect(detail.usage.today).toMatchObject({ tokens_in: 150, tokens_out: 15, by_source: { chat: 110, heartbeat: 22, task: 33, subagent: 0 } });
    expect(detail.usage.last_30_days.by_source).toEqual({ chat: 110, heartbeat: 22, task: 33, subagent: 44 });
    // The user sees the same split of today on their own account.
    const own = await api.json<{ usage: { model_tokens: { used: number; by_source: Record<string, number> } } }>(await api.get('/account', bearer(guest)));
    expect(own.usage.model_tokens).toMatchObject({ used: 165, by_source: { chat: 110, heartbeat: 22, task: 33, subagent: 0 } });
  });

  it('stop and restart an agent; the running list shows it with its user', async () => {
    const pair = await api.email(uniqueEmail('agent'));
    const { user_id: userId } = await api.me(pair);
    expect((await api.get('/agent/health', bearer(pair))).status).toBe(200);
    const listed = await api.json<{ agents: Array<{ user_id: string; memory_bytes: number | null; runs_in_flight: number | null }> }>(
      await api.get('/admin/agents', admin.headers),
    );
    expect(listed.agents.find((a) => a.user_id === userId)).toMatchObject({ runs_in_flight: 0, memory_bytes: expect.any(Number) });
    expect((await api.post(`/admin/agents/${userId}/stop`, {}, admin.headers)).status).toBe(204);
    changes.push({ action: 'agent.stop', target: userId });
    const after = await api.json<{ agents: Array<{ user_id: string }> }>(await api.get('/admin/agents', admin.headers));
    expect(after.agents.find((a) => a.user_id === userId)).toBeUndefined();
    expect((await api.post(`/admin/agents/${userId}/restart`, {}, admin.headers)).status).toBe(204);
    changes.push({ action: 'agent.restart', target: userId });
    const restarted = await api.json<{ agents: Array<{ user_id: string }> }>(await api.get('/admin/agents', admin.headers));
    expect(restarted.agents.find((a) => a.user_id === userId)).toBeDefined();
    expect((await api.get('/admin/agents/usage?days=7', admin.headers)).status).toBe(200);
  });

  it('pages of users stay stable (no repeat, no gap) while users sign up concurrently', async () => {
    for (let i = 0; i < 30; i++) await api.guest();
    const expected = (await account.services.store.db.user.findMany({ orderBy: [{ createdAt: 'desc' }, { id: 'desc' }], select: { id: true } })).map(
      (u) => u.id,
    );
    let signUps = true;
    const background = (async () => {
      while (signUps) await api.guest();
    })();
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: UsersPage = await api.json<UsersPage>(await api.get(`/admin/users?limit=7${cursor ? `&cursor=${cursor}` : ''}`, admin.headers));
      seen.push(...page.users.map((u) => u.id));
      cursor = page.next_cursor;
      await api.guest();
    } while (cursor);
    signUps = false;
    await background;
    // Users created while paging show up before the first page only, never inside the walk.
    const firstKnown = seen.indexOf(expected[0] as string);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.slice(firstKnown)).toEqual(expected);
  });

  it('the audit log holds a row for every admin action of this file, is paged by cursor and cannot be changed', async () => {
    const all: Array<{ action: string; target: { id: string } | null; actor: { type: string } }> = [];
    let cursor: string | null = null;
    do {
      const page: { events: typeof all; next_cursor: string | null } = await api.json(
        await api.get(`/admin/audit?limit=20${cursor ? `&cursor=${cursor}` : ''}`, admin.headers),
      );
      all.push(...page.events);
      cursor = page.next_cursor;
    } while (cursor);
    for (const change of changes) expect(all.some((e) => e.action === change.action && e.target?.id === change.target)).toBe(true);
    expect(all.filter((e) => e.action === 'key.create').length).toBeGreaterThanOrEqual(4);
    const onlyBans = await api.json<{ events: Array<{ action: string }> }>(await api.get('/admin/audit?action=user.ban', admin.headers));
    expect(onlyBans.events.every((e) => e.action === 'user.ban')).toBe(true);
    // No route edits or deletes it, and the store itself refuses to.
    expect((await api.del('/admin/audit', admin.headers)).status).toBe(405);
    await expect(account.services.store.db.auditEvent.deleteMany({})).rejects.toThrow(/append-only/);
    await expect(account.services.store.db.auditEvent.updateMany({ data: { action: 'forged' } })).rejects.toThrow(/append-only/);
  });
});
