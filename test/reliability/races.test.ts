/**
 * Single-use credentials under a burst: 50 concurrent uses of one refresh token, one auth code,
 * one e-mail code (and link), one wallet nonce → exactly one token pair, every round, on PGlite
 * and on PostgreSQL. The losers get 401 in the documented shape (never a 5xx).
 */
import { decodeJwt } from 'jose';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueAuthCode } from '../../server/account/auth/oauth/codes.js';
import { accountStoreKinds } from '../support/postgres.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';
import type { TokenPair as Pair } from '@contracts/account/tokens.js';

const BURST = 50;
const ROUNDS = 5;

describe.each(await accountStoreKinds())('50 concurrent uses of one credential on %s', (kind) => {
  let account: TestAccount;
  let api: string;
  const post = (p: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${api}${p}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

  /** Fires BURST copies at once; expects exactly one 200 and the rest 401; returns the winner's body. */
  async function burst(p: string, body: () => unknown, headers: Record<string, string> = {}): Promise<Pair> {
    const answers = await Promise.all(Array.from({ length: BURST }, () => post(p, body(), headers)));
    const statuses = answers.map((r) => r.status);
    const bodies = await Promise.all(answers.map((r) => r.json() as Promise<Record<string, unknown>>));
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 401)).toHaveLength(BURST - 1);
    for (const [i, b] of bodies.entries()) if (statuses[i] === 401) expect(b).toEqual({ detail: expect.any(String), code: expect.any(String) });
    return bodies[statuses.indexOf(200)] as unknown as Pair;
  }

  beforeAll(async () => {
    account = await startTestAccount(kind, { RATE_LIMIT_MULTIPLIER: '100000' });
    api = `${account.url}/api/v1`;
  });
  afterAll(() => account.stop());

  it(`refresh token: exactly one new pair, ${ROUNDS} rounds`, async () => {
    let pair = (await (await post('/auth/guest', { device_id: `race-refresh-${kind}` })).json()) as Pair;
    for (let round = 0; round < ROUNDS; round++) {
      const token = pair.refresh_token;
      pair = await burst('/auth/refresh', () => ({ refresh_token: token }));
      // The winner's pair works, and the session moved exactly one generation.
      expect((await fetch(`${api}/auth/me`, { headers: { authorization: `Bearer ${pair.access_token}` } })).status).toBe(200);
      expect(decodeJwt(pair.refresh_token).gen).toBe(round + 1);
    }
  });

  it(`auth code: exactly one exchange, ${ROUNDS} rounds`, async () => {
    const guest = (await (await post('/auth/guest', { device_id: `race-code-${kind}` })).json()) as Pair;
    const userId = decodeJwt(guest.access_token).sub as string;
    for (let round = 0; round < ROUNDS; round++) {
      const { code, browserSecret } = await issueAuthCode(account.services.store.db, { userId, provider: 'idpa', now: new Date(), ttlSeconds: 60 });
      await burst('/auth/exchange', () => ({ code }), { cookie: `oauth_exchange=${browserSecret}` });
    }
  });

  it(`e-mail code and link: exactly one sign-in, ${ROUNDS} rounds each`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const email = `race-${kind}-${round}@example.com`;
      const byCode = await account.services.email.request(email);
      await burst('/auth/verify-magic-link', () => ({ email, code: byCode.code }));
      const byLink = await account.services.email.request(email);
      await burst('/auth/verify-magic-link', () => ({ token: byLink.token }));
    }
    await account.services.mail.idle();
  });

  it(`wallet nonce: exactly one sign-in, ${ROUNDS} rounds`, async () => {
    const wallet = privateKeyToAccount(generatePrivateKey());
    for (let round = 0; round < ROUNDS; round++) {
      const challenge = (await (await post('/auth/wallet/challenge', { address: wallet.address })).json()) as { nonce: string; message: string };
      const signature = await wallet.signMessage({ message: challenge.message });
      await burst('/auth/wallet/verify', () => ({ address: wallet.address, signature, nonce: challenge.nonce }));
    }
  });
});
