import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { decodeJwt, SignJWT } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createAccountClient, errorCode, localTokenStorage, memoryTokenStorage, type StoredTokens } from '../../client/sdk/account.js';
import { LOGIN_EMAIL_MESSAGE } from '../../server/account/auth/email/service.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';
import { signInSecrets, startSmtpSink, type SmtpSink } from '../support/smtp.js';
import { testDeviceId } from '../support/devices.js';
import { gate } from '../support/gate.js';

describe('account client SDK (Node, against a real service)', () => {
  let account: TestAccount;
  let sink: SmtpSink;
  /** Refreshes as the service sees them. */
  let refreshSpy: ReturnType<typeof vi.spyOn>;

  beforeAll(async () => {
    sink = await startSmtpSink();
    account = await startTestAccount('pglite', { SMTP_URL: sink.url });
  });
  afterAll(async () => {
    await account.stop();
    await sink.close();
  });
  afterEach(() => refreshSpy?.mockRestore());
  const countRefreshes = () => {
    refreshSpy = vi.spyOn(account.services.tokens, 'refresh');
    return () => refreshSpy.mock.calls.length;
  };
  const device = () => testDeviceId(`sdk-${randomBytes(4).toString('hex')}`);
  const expire = async (storage: { get(): StoredTokens | null | Promise<StoredTokens | null>; set(t: StoredTokens | null): void | Promise<void> }) => {
    const tokens = (await storage.get())!;
    await storage.set({ ...tokens, access_expires_at: Date.now() - 1000 });
  };

  it('signs in as a guest, then by e-mail code, upgrading the guest in place', async () => {
    const client = createAccountClient({ url: account.url });
    await client.signInAsGuest(device());
    const guest = await client.me();
    expect(guest.guest).toBe(true);
    const email = `sdk-${randomBytes(4).toString('hex')}@example.com`;
    expect(await client.requestEmailSignIn(email)).toEqual({ message: LOGIN_EMAIL_MESSAGE });
    const { code } = signInSecrets(await sink.next(email));
    await client.verifyEmail({ email, code });
    expect(await client.me()).toMatchObject({ user_id: guest.user_id, guest: false });
  });

  it('surfaces the service error codes', async () => {
    const client = createAccountClient({ url: account.url });
    const failure = await client.verifyEmail({ email: 'nobody@example.com', code: '000000' }).catch((e: unknown) => e);
    expect(errorCode(failure)).toBe('INVALID_CODE');
    expect(errorCode(await client.me().catch((e: unknown) => e))).toBe('MISSING_TOKEN');
  });

  it('two callers that find the access token expired cause exactly one refresh', async () => {
    const storage = memoryTokenStorage();
    const client = createAccountClient({ url: account.url, storage });
    await client.signInAsGuest(device());
    const before = (await storage.get())!;
    await expire(storage);
    const refreshes = countRefreshes();
    const [a, b, c] = await Promise.all([client.me(), client.me(), client.accessToken()]);
    expect(refreshes()).toBe(1);
    expect(a.session_id).toBe(b.session_id);
    const after = (await storage.get())!;
    expect(after.refresh_token).not.toBe(before.refresh_token);
    expect(c).toBe(after.access_token);
    const session = await account.services.store.db.session.findUnique({ where: { id: a.session_id } });
    expect(session).toMatchObject({ generation: 1, revokedAt: null });
  });

  it('when the service says TOKEN_EXPIRED although the local clock disagrees: one refresh, both calls retried', async () => {
    const storage = memoryTokenStorage();
    const client = createAccountClient({ url: account.url, storage });
    await client.signInAsGuest(device());
    const tokens = (await storage.get())!;
    const { keys } = account.services.tokens.issuer;
    const past = Math.floor(Date.now() / 1000) - 3600;
    const expired = await new SignJWT({ ...decodeJwt(tokens.access_token), iat: past - 900, exp: past })
      .setProtectedHeader({ alg: 'EdDSA', kid: keys.kid })
      .sign(keys.privateKey);
    await storage.set({ ...tokens, access_token: expired, access_expires_at: Date.now() + 600_000 });
    const refreshes = countRefreshes();
    const [a, b] = await Promise.all([client.me(), client.me()]);
    expect(refreshes()).toBe(1);
    expect(a.user_id).toBe(b.user_id);
  });

  it('two clients sharing one storage (two tabs) both carry on, and the session survives', async () => {
    const storage = memoryTokenStorage();
    const tabA = createAccountClient({ url: account.url, storage });
    const tabB = createAccountClient({ url: account.url, storage });
    await tabA.signInAsGuest(device());
    await expire(storage);
    const [a, b] = await Promise.all([tabA.me(), tabB.me()]);
    expect(a.session_id).toBe(b.session_id);
    expect((await tabA.me()).session_id).toBe(a.session_id);
    const session = await account.services.store.db.session.findUnique({ where: { id: a.session_id } });
    expect(session?.revokedAt).toBeNull();
  });

  it('a session ended elsewhere: the refresh fails with its code and the local tokens are dropped', async () => {
    const storage = memoryTokenStorage();
    const phone = createAccountClient({ url: account.url, storage });
    const id = device();
    await phone.signInAsGuest(id);
    const laptop = createAccountClient({ url: account.url });
    await laptop.signInAsGuest(id);
    await laptop.logoutAll();
    expect(await laptop.isSignedIn()).toBe(false);
    await expire(storage);
    const failure = await phone.me().catch((e: unknown) => e);
    expect(errorCode(failure)).toBe('INVALID_REFRESH_TOKEN');
    expect(await storage.get()).toBeNull();
  });

  it('logout ends the session on the service and locally', async () => {
    const storage = memoryTokenStorage();
    const client = createAccountClient({ url: account.url, storage });
    await client.signInAsGuest(device());
    const access = (await client.accessToken())!;
    await client.logout();
    expect(await storage.get()).toBeNull();
    const res = await fetch(`${account.url}/api/v1/auth/me`, { headers: { authorization: `Bearer ${access}` } });
    expect(res.status).toBe(401);
  });

  it('a refresh that crosses a sign-out (or a new sign-in) neither brings the left session back nor touches the new one', async () => {
    // The network holds the refresh on its way (the service then refuses it: the session has
    // ended) or holds its answer (the service rotated first), until the client has moved on.
    for (const held of ['answer', 'request'] as const) {
      for (const next of ['signed out', 'signed in again'] as const) {
        const released = gate();
        const reached = gate();
        const slowRefresh: typeof fetch = async (input, init) => {
          if (!String(input).includes('tokens.refresh')) return fetch(input, init);
          if (held === 'request') {
            reached.open();
            await released.opened;
            return fetch(input, init);
          }
          const res = await fetch(input, init);
          reached.open();
          await released.opened;
          return res;
        };
        const storage = memoryTokenStorage();
        const client = createAccountClient({ url: account.url, storage, fetch: slowRefresh });
        await client.signInAsGuest(device());
        const refresh = client.refresh().catch((error: unknown) => errorCode(error));
        await reached.opened;
        await client.logout();
        const again = next === 'signed in again' ? await client.signInAsGuest(device()) : undefined;
        released.open();
        const outcome = await refresh;
        const label = `${held} held, ${next}`;
        expect(outcome, label).toEqual(held === 'request' ? 'INVALID_REFRESH_TOKEN' : null);
        expect((await storage.get())?.refresh_token, label).toBe(again?.refresh_token);
      }
    }
  });

  it('localTokenStorage round-trips through any Web Storage and ignores junk', () => {
    const map = new Map<string, string>();
    const web = {
      getItem: (k: string) => map.get(k) ?? null,
      setItem: (k: string, v: string) => void map.set(k, v),
      removeItem: (k: string) => void map.delete(k),
    };
    const storage = localTokenStorage('t', web);
    expect(storage.get()).toBeNull();
    const tokens = { access_token: 'a', refresh_token: 'r', access_expires_at: 1 };
    storage.set(tokens);
    expect(storage.get()).toEqual(tokens);
    map.set('t', '{not json');
    expect(storage.get()).toBeNull();
    storage.set(null);
    expect(map.has('t')).toBe(false);
  });

  it('imports nothing Node-only (usable in the browser)', async () => {
    const runtimeImports = async (file: string) => {
      const source = await readFile(new URL(`../../${file}`, import.meta.url), 'utf8');
      return [...source.matchAll(/^import\s+(type\s+)?.*?from\s+'([^']+)'/gm)].filter((m) => !m[1]).map((m) => m[2]!);
    };
    const imports = await runtimeImports('client/sdk/account.ts');
    // Contracts are shared plain data and schemas: each one the SDK loads must be browser-safe too.
    const contracts = imports.filter((i) => i.startsWith('@contracts/'));
    expect(imports.filter((i) => !contracts.includes(i)).sort()).toEqual(['@trpc/client', '@trpc/server/observable', 'superjson']);
    for (const contract of contracts) {
      const inner = await runtimeImports(contract.replace('@contracts/', 'contracts/').replace(/\.js$/, '.ts'));
      expect(
        inner.filter((i) => !i.startsWith('@contracts/') && i !== 'zod'),
        contract,
      ).toEqual([]);
    }
  });
});
