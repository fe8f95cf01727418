/**
 * Account self-service over real HTTP: who am I, linking through the sign-in verify endpoints,
 * unlinking, sessions and the activity log, with the hostile cases (another user's ids, the
 * last method, a method owned by someone else, racing unlinks).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountStoreKinds } from '../support/postgres.js';
import { accountApi, bearer, newWallet, uniqueEmail, type Pair } from '../support/account-api.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';

const kinds = await accountStoreKinds();

interface AccountView {
  user_id: string;
  guest: boolean;
  created_at: string;
  identities: Array<{ id: string; method: string; label: string; created_at: string; last_used_at: string | null }>;
}
interface SessionView {
  id: string;
  created_at: string;
  last_used_at: string;
  user_agent: string | null;
  ip: string | null;
  current: boolean;
}
interface ActivityView {
  events: Array<{ type: string; at: string; ip: string | null; user_agent: string | null; detail: Record<string, string> }>;
}

describe.each(kinds)('account self-service on %s', (kind) => {
  let account: TestAccount;
  let api: ReturnType<typeof accountApi>;

  const view = async (pair: Pair) => api.json<AccountView>(await api.get('/account', bearer(pair)));
  const sessions = async (pair: Pair) => (await api.json<{ sessions: SessionView[] }>(await api.get('/account/sessions', bearer(pair)))).sessions;
  const activity = async (pair: Pair) => (await api.json<ActivityView>(await api.get('/account/activity', bearer(pair)))).events;
  const expectError = async (res: Response, status: number, code: string) => {
    const body = (await res.json()) as { code: string; detail: string };
    expect({ status: res.status, code: body.code }).toEqual({ status, code });
    expect(body.detail).toEqual(expect.any(String));
  };

  beforeAll(async () => {
    account = await startTestAccount(kind);
    api = accountApi(account);
  });
  afterAll(async () => {
    await account.stop();
  });

  describe('GET /account', () => {
    it('lists every linked method with a label a person recognises; UTC times without a zone', async () => {
      const email = uniqueEmail('who');
      const pair = await api.email(email);
      const me = await view(pair);
      expect(me).toEqual({
        user_id: (await api.me(pair)).user_id,
        guest: false,
        tier: 'full',
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}$/),
        timezone: null,
        identities: [{ id: expect.any(String), method: 'email', label: email, created_at: expect.any(String), last_used_at: expect.any(String) }],
        usage: {
          messages_left_today: null,
          messages_per_day: null,
          model_tokens: {
            used: 0,
            limit: 2_000_000,
            resets_at: expect.stringMatching(/T00:00:00\.000Z$/),
            by_source: { chat: 0, heartbeat: 0, task: 0, subagent: 0 },
          },
        },
      });
    });

    it('a guest has no listed methods (its device id is not one)', async () => {
      const guest = await api.guest();
      expect(await view(guest)).toMatchObject({ guest: true, identities: [], usage: { messages_left_today: 50 * 1000, messages_per_day: 50 * 1000 } });
    });

    it('needs a live access token', async () => {
      await expectError(await api.get('/account'), 401, 'MISSING_TOKEN');
      await expectError(await api.get('/account', { authorization: 'Bearer a.b.c' }), 401, 'INVALID_TOKEN');
    });

    it('answers over tRPC too and is in the OpenAPI document', async () => {
      const pair = await api.email(uniqueEmail('trpc'));
      const res = await fetch(`${account.url}/trpc/account.get`, { headers: bearer(pair) });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { result: { data: { json: AccountView } } }).result.data.json.identities[0]?.method).toBe('email');
      const doc = (await (await fetch(`${account.url}/api/v1/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
      expect(Object.keys(doc.paths['/account'] ?? {}).sort()).toEqual(['delete', 'get']);
      expect(Object.keys(doc.paths['/account/sessions'] ?? {})).toEqual(['get']);
      expect(Object.keys(doc.paths['/account/sessions/{id}'] ?? {})).toEqual(['delete']);
      expect(Object.keys(doc.paths['/account/identities/{id}'] ?? {})).toEqual(['delete']);
      expect(Object.keys(doc.paths['/account/activity'] ?? {})).toEqual(['get']);
    });
  });

  describe('linking', () => {
    it('a full account links a wallet through wallet/verify with its access token: same user, two methods, logged', async () => {
      const pair = await api.email(uniqueEmail('link'));
      const wallet = newWallet();
      const linked = await api.wallet(wallet, bearer(pair));
      const me = await view(pair);
      expect((await api.me(linked)).user_id).toBe(me.user_id);
      expect(me.identities.map((i) => [i.method, i.label])).toEqual([
        ['email', expect.any(String)],
        ['wallet', wallet.address], // checksummed
      ]);
      // Signing in with the wallet alone now opens the same account.
      expect((await api.me(await api.wallet(wallet))).user_id).toBe(me.user_id);
      const linkedEvents = (await activity(pair)).filter((e) => e.type === 'identity_linked');
      expect(linkedEvents).toEqual([expect.objectContaining({ detail: { method: 'wallet', label: wallet.address } })]);
    });

    it('a full account links an e-mail address through verify-magic-link', async () => {
      const wallet = newWallet();
      const pair = await api.wallet(wallet);
      const email = uniqueEmail('link-mail');
      await api.email(email, bearer(pair));
      expect((await view(pair)).identities.map((i) => i.label)).toEqual([wallet.address, email]);
    });

    it('a method that belongs to someone else is 409 IDENTITY_IN_USE and neither account changes', async () => {
      const alice = await api.email(uniqueEmail('alice'));
      const bobWallet = newWallet();
      const bob = await api.wallet(bobWallet);
      const [aliceBefore, bobBefore] = await Promise.all([view(alice), view(bob)]);
      await expectError(await api.walletResponse(bobWallet, bearer(alice)), 409, 'IDENTITY_IN_USE');
      const bobEmail = uniqueEmail('bob');
      await api.email(bobEmail, bearer(bob));
      // Alice herself asks for the mail (a mail someone else asked for would just sign in to Bob's account).
      const { code } = await account.services.email.request(bobEmail, new Date(), (await api.me(alice)).user_id);
      await expectError(await api.post('/auth/verify-magic-link', { email: bobEmail, code }, bearer(alice)), 409, 'IDENTITY_IN_USE');
      expect(await view(alice)).toEqual(aliceBefore);
      expect((await view(bob)).identities.map((i) => i.label)).toEqual([...bobBefore.identities.map((i) => i.label), bobEmail]);
    });

    it('a guest still upgrades in place through the same path', async () => {
      const guest = await api.guest();
      const guestId = (await api.me(guest)).user_id;
      const upgraded = await api.email(uniqueEmail('guest-up'), bearer(guest));
      expect(await api.me(upgraded)).toMatchObject({ user_id: guestId, guest: false });
      expect((await view(upgraded)).identities).toHaveLength(1);
    });
  });

  describe('unlinking', () => {
    it('removes a method (204); the method no longer signs in to the account; logged', async () => {
      const pair = await api.email(uniqueEmail('unlink'));
      const wallet = newWallet();
      await api.wallet(wallet, bearer(pair));
      const walletIdentity = (await view(pair)).identities.find((i) => i.method === 'wallet')!;
      const res = await api.del(`/account/identities/${walletIdentity.id}`, bearer(pair));
      expect(res.status).toBe(204);
      expect((await view(pair)).identities.map((i) => i.method)).toEqual(['email']);
      // The wallet alone is now a stranger: a new account.
      expect((await api.me(await api.wallet(wallet))).user_id).not.toBe((await view(pair)).user_id);
      expect((await activity(pair)).find((e) => e.type === 'identity_unlinked')).toMatchObject({ detail: { method: 'wallet', label: wallet.address } });
    });

    it('never the last method of a full account: 409 LAST_IDENTITY', async () => {
      const pair = await api.email(uniqueEmail('last'));
      const [only] = (await view(pair)).identities;
      await expectError(await api.del(`/account/identities/${only!.id}`, bearer(pair)), 409, 'LAST_IDENTITY');
      expect((await view(pair)).identities).toHaveLength(1);
    });

    it("another user's method is 404 and stays where it is", async () => {
      const alice = await api.email(uniqueEmail('alice-u'));
      const bob = await api.email(uniqueEmail('bob-u'));
      await api.wallet(newWallet(), bearer(bob));
      const bobBefore = await view(bob);
      for (const identity of bobBefore.identities)
        await expectError(await api.del(`/account/identities/${identity.id}`, bearer(alice)), 404, 'IDENTITY_NOT_FOUND');
      await expectError(await api.del('/account/identities/not-a-uuid', bearer(alice)), 404, 'IDENTITY_NOT_FOUND');
      expect(await view(bob)).toEqual(bobBefore);
    });

    it('20 concurrent unlinks of the two methods of one account leave exactly one', async () => {
      const pair = await api.email(uniqueEmail('race'));
      await api.wallet(newWallet(), bearer(pair));
      const ids = (await view(pair)).identities.map((i) => i.id);
      expect(ids).toHaveLength(2);
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => api.del(`/account/identities/${ids[i % 2]}`, bearer(pair))));
      const statuses = answers.map((r) => r.status);
      expect(statuses.filter((s) => s === 204)).toHaveLength(1);
      expect(statuses.every((s) => s === 204 || s === 404 || s === 409)).toBe(true);
      expect((await view(pair)).identities).toHaveLength(1);
    });
  });

  describe('sessions', () => {
    it('lists where the account is signed in, newest first, with device, address and which one is this', async () => {
      const email = uniqueEmail('sessions');
      const first = await api.email(email, { 'user-agent': 'Phone/1.0' });
      const second = await api.email(email, { 'user-agent': 'Laptop/2.0' });
      const list = await sessions(second);
      expect(list).toEqual([
        {
          id: (await api.me(second)).session_id,
          created_at: expect.any(String),
          last_used_at: expect.any(String),
          user_agent: 'Laptop/2.0',
          ip: expect.stringMatching(/127\.0\.0\.1/),
          current: true,
        },
        {
          id: (await api.me(first)).session_id,
          created_at: expect.any(String),
          last_used_at: expect.any(String),
          user_agent: 'Phone/1.0',
          ip: expect.stringMatching(/127\.0\.0\.1/),
          current: false,
        },
      ]);
    });

    it('notes access-token use in memory and writes it at most once a minute per session', async () => {
      const pair = await api.email(uniqueEmail('usage'), { 'user-agent': 'Old/1' });
      await account.services.tokens.usage.flush();
      await api.call('GET', '/auth/me', bearer(pair, { 'user-agent': 'New/2' }));
      expect(await account.services.tokens.usage.flush()).toEqual({ sessions: 1, users: 0 });
      const [row] = await sessions(pair);
      expect(row?.user_agent).toBe('New/2');
      // Later calls within the minute note nothing more: no write on the token path.
      for (let i = 0; i < 5; i++) await api.call('GET', '/auth/me', bearer(pair, { 'user-agent': 'Newer/3' }));
      expect(await account.services.tokens.usage.flush()).toEqual({ sessions: 0, users: 0 });
      expect((await sessions(pair))[0]?.user_agent).toBe('New/2');
    });

    it('revoking a session stops its access token at once and kills its refresh token; logged', async () => {
      const email = uniqueEmail('revoke');
      const mine = await api.email(email);
      const other = await api.email(email);
      const otherId = (await api.me(other)).session_id;
      const res = await api.del(`/account/sessions/${otherId}`, bearer(mine));
      expect(res.status).toBe(204);
      await expectError(await api.get('/auth/me', bearer(other)), 401, 'SESSION_REVOKED');
      expect((await api.post('/auth/refresh', { refresh_token: other.refresh_token })).status).toBe(401);
      expect((await sessions(mine)).map((s) => s.id)).toEqual([(await api.me(mine)).session_id]);
      expect((await activity(mine)).find((e) => e.type === 'session_revoked')).toMatchObject({ detail: { session_id: otherId } });
      // Once revoked, it is gone: a second revoke names nothing.
      await expectError(await api.del(`/account/sessions/${otherId}`, bearer(mine)), 404, 'SESSION_NOT_FOUND');
    });

    it("another user's session is 404 and keeps working", async () => {
      const alice = await api.email(uniqueEmail('alice-s'));
      const bob = await api.email(uniqueEmail('bob-s'));
      const bobSession = (await api.me(bob)).session_id;
      await expectError(await api.del(`/account/sessions/${bobSession}`, bearer(alice)), 404, 'SESSION_NOT_FOUND');
      await expectError(await api.del('/account/sessions/nonsense', bearer(alice)), 404, 'SESSION_NOT_FOUND');
      expect((await api.get('/auth/me', bearer(bob))).status).toBe(200);
      expect((await api.post('/auth/refresh', { refresh_token: bob.refresh_token })).status).toBe(200);
      expect((await sessions(alice)).map((s) => s.id)).not.toContain(bobSession);
    });
  });

  describe('activity', () => {
    it('records sign-ins with their method, a refresh-token reuse with the session it ended, and logout everywhere; newest first', async () => {
      const email = uniqueEmail('activity');
      const stolen = await api.email(email, { 'user-agent': 'Victim/1' });
      const stolenSession = (await api.me(stolen)).session_id;
      const once = await api.json<Pair>(await api.post('/auth/refresh', { refresh_token: stolen.refresh_token }));
      await api.json<Pair>(await api.post('/auth/refresh', { refresh_token: once.refresh_token }));
      // The first token again, two generations back: theft, the session ends.
      await expectError(await api.post('/auth/refresh', { refresh_token: stolen.refresh_token }), 401, 'REFRESH_TOKEN_REUSED');
      const fresh = await api.email(email);
      expect((await api.call('POST', '/auth/logout/all', bearer(fresh))).status).toBe(204);
      const again = await api.email(email);
      const events = await activity(again);
      expect(events.map((e) => e.type)).toEqual(['sign_in', 'logout_all', 'sign_in', 'refresh_token_reused', 'sign_in']);
      expect(events[4]).toMatchObject({
        detail: { method: 'email', session_id: stolenSession },
        user_agent: 'Victim/1',
        ip: expect.stringMatching(/127\.0\.0\.1/),
      });
      expect(events[3]).toMatchObject({ detail: { session_id: stolenSession } });
      const times = events.map((e) => e.at);
      expect([...times].sort().reverse()).toEqual(times);
    });

    it("shows nobody else's events", async () => {
      const alice = await api.email(uniqueEmail('alice-a'));
      const bob = await api.email(uniqueEmail('bob-a'));
      await api.wallet(newWallet(), bearer(bob));
      expect((await activity(alice)).map((e) => e.type)).toEqual(['sign_in']);
    });

    it("an agent's 600 web fetches after a sign-in do not push the sign-in out of view: the newest 100 web calls beside the account's events", async () => {
      const pair = await api.email(uniqueEmail('busy-agent'));
      const userId = (await api.me(pair)).user_id;
      const later = Date.now() + 1000;
      await account.services.store.db.activityEvent.createMany({
        data: Array.from({ length: 600 }, (_, i) => ({ userId, type: 'web_fetch', at: new Date(later + i), detail: { url: `https://example.com/${i}` } })),
      });
      const events = await activity(pair);
      expect(events.filter((e) => e.type === 'web_fetch')).toHaveLength(100);
      expect(events.filter((e) => e.type === 'web_fetch')[0]).toMatchObject({ detail: { url: 'https://example.com/599' } });
      expect(events.at(-1)).toMatchObject({ type: 'sign_in' });
      const times = events.map((e) => e.at);
      expect([...times].sort().reverse()).toEqual(times);
    });

    it('keeps 90 days: older events are pruned and never shown', async () => {
      const pair = await api.email(uniqueEmail('prune'));
      const userId = (await api.me(pair)).user_id;
      const old = new Date(Date.now() - 91 * 24 * 60 * 60 * 1000);
      await account.services.store.db.activityEvent.create({ data: { userId, type: 'logout_all', at: old } });
      expect((await activity(pair)).map((e) => e.type)).toEqual(['sign_in']);
      const { pruneActivity } = await import('../../server/account/events/activity.js');
      expect(await pruneActivity(account.services.store.db)).toBeGreaterThanOrEqual(1);
      expect(await account.services.store.db.activityEvent.count({ where: { userId } })).toBe(1);
    });
  });
});

describe('account self-service rate limits', () => {
  let account: TestAccount;
  let api: ReturnType<typeof accountApi>;

  beforeAll(async () => {
    account = await startTestAccount('pglite', { RATE_LIMIT_MULTIPLIER: '1' });
    api = accountApi(account);
  });
  afterAll(async () => {
    await account.stop();
  });

  it('changes are limited to 20 a minute per client, passkey calls to 10, with the usual 429 body', async () => {
    const pair = await api.email(uniqueEmail('limits'));
    const statuses: number[] = [];
    for (let i = 0; i < 21; i++) statuses.push((await api.del('/account/sessions/00000000-0000-4000-8000-000000000000', bearer(pair))).status);
    expect(statuses.slice(0, 20).every((s) => s === 404)).toBe(true);
    expect(statuses[20]).toBe(429);
    const limited = await api.del('/account/identities/00000000-0000-4000-8000-000000000000', bearer(pair));
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await limited.json()).toMatchObject({ code: 'RATE_LIMITED', detail: expect.any(String) });
    for (let i = 0; i < 10; i++) expect((await api.post('/auth/passkey/login/options', {})).status).toBe(200);
    expect((await api.post('/auth/passkey/login/options', {})).status).toBe(429);
  });
});
