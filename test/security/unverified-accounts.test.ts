/**
 * Free full accounts (docs/security.md, "Accounts nothing vouches for"): a freshly generated
 * wallet key, or a software passkey on a guest, used to give a full account — no per-client
 * sign-up cap, no guest message quota, the full daily token budget, outside the all-guests
 * budget. Each test is that attack, and fails on the code before: such accounts are `unverified`,
 * counted and budgeted as guests until a verified e-mail or a provider account is linked, unless
 * the operator sets WALLET_ACCOUNTS=full.
 */
import { randomBytes } from 'node:crypto';
import type { PublicKeyCredentialCreationOptionsJSON, PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/server';
import { decodeJwt } from 'jose';
import type { PrivateKeyAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAccountConfig } from '../../server/account/config.js';
import { accountApi, bearer, newWallet, uniqueEmail, type Pair } from '../support/account-api.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';
import { signInSecrets, startSmtpSink, type SmtpSink } from '../support/smtp.js';
import { SoftAuthenticator } from '../support/soft-authenticator.js';

const FRONTEND = 'http://app.test:8080';
const randomIpv4 = () => `10.${randomBytes(3).join('.')}`;
const budgets = { MODEL_DAILY_TOKENS: '5000', MODEL_DAILY_TOKENS_GUEST: '1000', MODEL_DAILY_TOKENS_GUESTS_TOTAL: '3000' };

interface AccountView {
  guest: boolean;
  tier: string;
  identities: Array<{ method: string }>;
  usage: { messages_per_day: number | null; model_tokens: { limit: number | null } };
}

describe('accounts nothing vouches for', () => {
  let sink: SmtpSink;
  let limited: TestAccount;
  let walletsFull: TestAccount;
  beforeAll(async () => {
    sink = await startSmtpSink();
    // The real limits (multiplier 1); each test picks its own client address.
    const base = { RATE_LIMIT_MULTIPLIER: '1', TRUST_PROXY: 'loopback', GUEST_SIGNUPS_PER_DAY: '2', FRONTEND_URL: FRONTEND, SMTP_URL: sink.url, ...budgets };
    [limited, walletsFull] = await Promise.all([startTestAccount('pglite', base), startTestAccount('pglite', { ...base, WALLET_ACCOUNTS: 'full' })]);
  }, 240_000); // two services starting on a shared machine
  afterAll(async () => {
    await Promise.all([limited?.stop(), walletsFull?.stop()]);
    await sink?.close();
  });

  /** The whole SIWE flow from client address `from`; the raw answer. */
  async function walletSignIn(account: TestAccount, signer: PrivateKeyAccount, from: string, headers: Record<string, string> = {}) {
    const api = accountApi(account);
    const xff = { 'x-forwarded-for': from };
    const { nonce, message } = await api.json<{ nonce: string; message: string }>(await api.post('/auth/wallet/challenge', { address: signer.address }, xff));
    const signature = await signer.signMessage({ message });
    return api.post('/auth/wallet/verify', { address: signer.address, signature, nonce }, { ...xff, ...headers });
  }
  const guestSignIn = (account: TestAccount, from: string) =>
    accountApi(account).post('/auth/guest', { device_id: `device-${randomBytes(12).toString('hex')}` }, { 'x-forwarded-for': from });
  const accountOf = async (account: TestAccount, pair: Pair) => accountApi(account).json<AccountView>(await accountApi(account).get('/account', bearer(pair)));
  const userIdOf = (pair: Pair) => decodeJwt(pair.access_token).sub as string;

  it("a fresh wallet key's account is capped like a guest: the 3rd new account of one client is 429 (GUEST_SIGNUPS_PER_DAY=2), a returning wallet still signs in", async () => {
    const from = randomIpv4();
    const [a, b, c] = [newWallet(), newWallet(), newWallet()];
    expect((await walletSignIn(limited, a, from)).status).toBe(200);
    expect((await walletSignIn(limited, b, from)).status).toBe(200);
    const third = await walletSignIn(limited, c, from);
    expect(third.status).toBe(429);
    const body = (await third.json()) as { code: string; detail: string };
    expect(body.code).toBe('RATE_LIMITED');
    expect(body.detail).toMatch(/a wallet that already has an account can still sign in/);
    expect(Number(third.headers.get('retry-after'))).toBeGreaterThan(3600);
    expect(await limited.services.store.db.identity.count({ where: { provider: 'wallet', subject: c.address.toLowerCase() } })).toBe(0);
    // Returning wallets never count; wallets and guests share one cap.
    expect((await walletSignIn(limited, a, from)).status).toBe(200);
    expect((await guestSignIn(limited, from)).status).toBe(429);
    expect((await walletSignIn(limited, c, randomIpv4())).status).toBe(200);
  });

  it("a fresh wallet key's account is budgeted like a guest: guest token, the guest message quota and token budget, inside the all-guests budget, no messenger", async () => {
    const pair = (await (await walletSignIn(limited, newWallet(), randomIpv4())).json()) as Pair;
    expect(decodeJwt(pair.access_token).guest).toBe(true);
    const me = await accountOf(limited, pair);
    expect(me).toMatchObject({ guest: true, tier: 'unverified', identities: [{ method: 'wallet' }] });
    expect(me.usage.messages_per_day).toBe(50);
    expect(me.usage.model_tokens.limit).toBe(1000);
    const api = accountApi(limited);
    expect(await api.get('/agent/messenger/status', bearer(pair)).then((r) => r.status)).toBe(403);
    // All guests together spend the day's 3000 tokens: the wallet account is refused with them (before any agent starts).
    const aGuest = (await (await guestSignIn(limited, randomIpv4())).json()) as Pair;
    await limited.services.modelBudget.record(userIdOf(aGuest), { tokensIn: 3000, tokensOut: 0 });
    const chat = await api.post('/agent/chat', { message: 'hi', chat_id: 'c1' }, bearer(pair));
    expect(chat.status).toBe(429);
    expect(await chat.json()).toMatchObject({ code: 'BUDGET_EXCEEDED', detail: expect.stringMatching(/for guests/) });
    await limited.services.store.db.modelUsage.deleteMany({ where: { scope: 'guests' } });
  });

  it('a passkey-only account (a guest that added a software passkey) signs in with it still capped and budgeted like a guest', async () => {
    const api = accountApi(limited);
    const from = randomIpv4();
    const guest = (await (await guestSignIn(limited, from)).json()) as Pair;
    const device = new SoftAuthenticator(FRONTEND);
    const options = await api.json<PublicKeyCredentialCreationOptionsJSON>(await api.post('/auth/passkey/register/options', {}, bearer(guest)));
    const registered = await api.json<Pair>(await api.post('/auth/passkey/register/verify', { response: device.create(options) }, bearer(guest)));
    expect(decodeJwt(registered.access_token).guest).toBe(true);
    const loginOptions = await api.json<PublicKeyCredentialRequestOptionsJSON>(await api.post('/auth/passkey/login/options', {}));
    const signedIn = await api.json<Pair>(await api.post('/auth/passkey/login/verify', { response: device.get(loginOptions) }));
    expect(userIdOf(signedIn)).toBe(userIdOf(guest));
    expect(decodeJwt(signedIn.access_token).guest).toBe(true);
    const me = await accountOf(limited, signedIn);
    expect(me).toMatchObject({ guest: true, tier: 'unverified', identities: [{ method: 'passkey' }] });
    expect(me.usage.messages_per_day).toBe(50);
    expect(me.usage.model_tokens.limit).toBe(1000);
    // Its creation counted as a guest's: one more from the same client, and the cap of 2 is reached.
    expect((await guestSignIn(limited, from)).status).toBe(200);
    expect((await guestSignIn(limited, from)).status).toBe(429);
  });

  it('WALLET_ACCOUNTS=full opts wallets into full accounts: not counted as new guests, no guest budgets', async () => {
    expect(loadAccountConfig({}).walletAccounts).toBe('unverified');
    expect(loadAccountConfig({ WALLET_ACCOUNTS: 'full' }).walletAccounts).toBe('full');
    expect(() => loadAccountConfig({ WALLET_ACCOUNTS: 'yes' })).toThrow(/WALLET_ACCOUNTS/);
    const from = randomIpv4();
    for (let i = 0; i < 3; i++) {
      const res = await walletSignIn(walletsFull, newWallet(), from);
      expect(res.status).toBe(200);
      const pair = (await res.json()) as Pair;
      expect(decodeJwt(pair.access_token).guest).toBeUndefined();
      const me = await accountOf(walletsFull, pair);
      expect(me).toMatchObject({ guest: false, tier: 'full' });
      expect(me.usage).toMatchObject({ messages_per_day: null, model_tokens: { limit: 5000 } });
    }
    // A guest that adds a wallet there becomes a full account.
    const guest = (await (await guestSignIn(walletsFull, randomIpv4())).json()) as Pair;
    const upgraded = (await (await walletSignIn(walletsFull, newWallet(), randomIpv4(), bearer(guest))).json()) as Pair;
    expect(await accountOf(walletsFull, upgraded)).toMatchObject({ guest: false, tier: 'full' });
  });

  it('linking a verified e-mail lifts the caps: the wallet account becomes full, for new sessions and refreshed old ones', async () => {
    const api = accountApi(limited);
    const wallet = (await (await walletSignIn(limited, newWallet(), randomIpv4())).json()) as Pair;
    expect((await accountOf(limited, wallet)).tier).toBe('unverified');
    const email = uniqueEmail('lifts');
    expect((await api.post('/auth/login/email', { email }, bearer(wallet, { 'x-forwarded-for': randomIpv4() }))).status).toBe(200);
    const { code } = signInSecrets(await sink.next(email));
    const linked = await api.json<Pair>(await api.post('/auth/verify-magic-link', { email, code }, bearer(wallet, { 'x-forwarded-for': randomIpv4() })));
    expect(userIdOf(linked)).toBe(userIdOf(wallet));
    expect(decodeJwt(linked.access_token).guest).toBeUndefined();
    const me = await accountOf(limited, linked);
    expect(me).toMatchObject({ guest: false, tier: 'full' });
    expect(me.usage).toMatchObject({ messages_per_day: null, model_tokens: { limit: 5000 } });
    expect(me.identities.map((i) => i.method).sort()).toEqual(['email', 'wallet']);
    // The wallet's own session, refreshed, is full too; and the all-guests budget no longer applies.
    const refreshed = await api.json<Pair>(await api.post('/auth/refresh', { refresh_token: wallet.refresh_token }, { 'x-forwarded-for': randomIpv4() }));
    expect(decodeJwt(refreshed.access_token).guest).toBeUndefined();
    await limited.services.modelBudget.record(userIdOf((await (await guestSignIn(limited, randomIpv4())).json()) as Pair), { tokensIn: 3000, tokensOut: 0 });
    await expect(limited.services.modelBudget.check(userIdOf(linked))).resolves.toBeUndefined();
    await limited.services.store.db.modelUsage.deleteMany({ where: { scope: 'guests' } });
  });
});
