/**
 * Wallet sign-in (SIWE) over real HTTP, REST and tRPC: viem local accounts sign the real
 * messages; every hostile case the issue lists is here. The default configuration: chain id 1,
 * no RPC_URL (EOAs verify offline; smart-wallet signatures fail closed).
 */
import { randomBytes } from 'node:crypto';
import { createTRPCClient, httpLink, TRPCClientError } from '@trpc/client';
import superjson from 'superjson';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { parseSiweMessage } from 'viem/siwe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHALLENGE_TTL_MS, issueChallenge, SIWE_STATEMENT, verifySignIn } from '../../server/account/auth/wallet/siwe.js';
import type { AccountRouter } from '../../server/account/router.js';
import { accountStoreKinds } from '../support/postgres.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';
import type { TokenPair as Pair } from '@contracts/account/tokens.js';
import { testDeviceId } from '../support/devices.js';

const kinds = await accountStoreKinds();

const newWallet = () => privateKeyToAccount(generatePrivateKey());

describe.each(kinds)('wallet sign-in on %s', (kind) => {
  let account: TestAccount;
  let api: string;
  const alice = newWallet();
  const bob = newWallet();

  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${api}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const challenge = async (address: string, headers: Record<string, string> = {}): Promise<{ nonce: string; message: string }> => {
    const res = await post('/auth/wallet/challenge', { address }, headers);
    expect(res.status).toBe(200);
    return (await res.json()) as { nonce: string; message: string };
  };
  const verify = (body: unknown, headers: Record<string, string> = {}) => post('/auth/wallet/verify', body, headers);
  const expectError = async (res: Response, status: number, code: string) => {
    const body = (await res.json()) as { code: string; detail: string };
    expect({ status: res.status, code: body.code }).toEqual({ status, code });
    expect(body.detail).toEqual(expect.any(String));
  };
  const userOf = async (pair: Pair) =>
    (await (await fetch(`${api}/auth/me`, { headers: { authorization: `Bearer ${pair.access_token}` } })).json()) as { user_id: string; guest: boolean };
  /** The whole flow for `signer` claiming `address`; `headers` go on the challenge and the verify alike. */
  const signIn = async (signer: PrivateKeyAccount, address: string = signer.address, headers: Record<string, string> = {}) => {
    const { nonce, message } = await challenge(address, headers);
    const signature = await signer.signMessage({ message });
    return verify({ address, signature, nonce }, headers);
  };

  beforeAll(async () => {
    account = await startTestAccount(kind);
    api = `${account.url}/api/v1`;
  });
  afterAll(() => account.stop());

  describe('challenge', () => {
    it('is an EIP-4361 message with our domain, URI, chain id, statement, a 128-bit nonce and a 5-minute expiry', async () => {
      const before = Date.now();
      const { nonce, message } = await challenge(alice.address.toLowerCase());
      expect(nonce).toMatch(/^[0-9a-f]{32}$/);
      const fields = parseSiweMessage(message);
      expect(fields).toMatchObject({
        scheme: 'http',
        domain: new URL(account.url).host,
        address: alice.address, // EIP-55 checksummed, although asked in lowercase
        statement: SIWE_STATEMENT,
        uri: account.services.config.frontendUrl,
        version: '1',
        chainId: 1,
        nonce,
      });
      const issuedAt = fields.issuedAt?.getTime() ?? 0;
      expect(issuedAt).toBeGreaterThanOrEqual(before - 1000);
      expect(issuedAt).toBeLessThanOrEqual(Date.now());
      expect(fields.expirationTime?.getTime()).toBe(issuedAt + CHALLENGE_TTL_MS);
      expect(message.startsWith(`${new URL(account.url).host} wants you`)).toBe(false); // scheme shown for http
      expect(message).toContain(`Nonce: ${nonce}`);
    });

    it('gives a fresh nonce every time', async () => {
      const nonces = new Set<string>();
      for (let i = 0; i < 5; i++) nonces.add((await challenge(alice.address)).nonce);
      expect(nonces.size).toBe(5);
    });

    it.each([
      ['empty', ''],
      ['too short', '0x1234'],
      ['no 0x prefix', alice.address.slice(2)],
      ['capital 0X prefix', `0X${alice.address.slice(2)}`],
      ['41 hex digits', `${alice.address}0`],
      ['non-hex', `0x${'g'.repeat(40)}`],
      [
        'mixed case with a wrong EIP-55 checksum',
        (() => {
          const a = alice.address;
          const i = [...a].findIndex((c, n) => n > 1 && /[a-fA-F]/.test(c));
          const flipped = a[i] === a[i]!.toUpperCase() ? a[i]!.toLowerCase() : a[i]!.toUpperCase();
          return a.slice(0, i) + flipped + a.slice(i + 1);
        })(),
      ],
      ['the zero address', `0x${'0'.repeat(40)}`],
      ['a number', 12345],
    ])('refuses a malformed address (%s) with 400', async (_name, address) => {
      await expectError(await post('/auth/wallet/challenge', { address }), 400, 'VALIDATION_FAILED');
    });

    it('accepts every EIP-55-valid spelling of one address and signs them into one account', async () => {
      const spellings = [alice.address, alice.address.toLowerCase(), `0x${alice.address.slice(2).toUpperCase()}`];
      const users = new Set<string>();
      for (const address of spellings) {
        const res = await signIn(alice, address);
        expect(res.status).toBe(200);
        users.add((await userOf((await res.json()) as Pair)).user_id);
      }
      expect(users.size).toBe(1);
    });
  });

  describe('verify', () => {
    it('signs an EOA in with the documented token pair, as an unverified account on guest terms (WALLET_ACCOUNTS=unverified)', async () => {
      const wallet = newWallet();
      const res = await signIn(wallet);
      expect(res.status).toBe(200);
      const pair = (await res.json()) as Pair;
      expect(pair).toEqual({ access_token: expect.any(String), refresh_token: expect.any(String), token_type: 'bearer', expires_in: 900 });
      const me = await userOf(pair);
      expect(me.guest).toBe(true);
      const again = (await (await signIn(wallet)).json()) as Pair;
      expect((await userOf(again)).user_id).toBe(me.user_id);
      const identity = await account.services.store.db.identity.findFirst({ where: { userId: me.user_id } });
      expect(identity).toMatchObject({ provider: 'wallet', subject: wallet.address.toLowerCase() });
    });

    it('refuses a signature by another key (401) and the failed attempt burns the nonce', async () => {
      const { nonce, message } = await challenge(alice.address);
      await expectError(await verify({ address: alice.address, signature: await bob.signMessage({ message }), nonce }), 401, 'INVALID_SIGNATURE');
      await expectError(await verify({ address: alice.address, signature: await alice.signMessage({ message }), nonce }), 401, 'INVALID_NONCE');
    });

    it('refuses a nonce issued for address X used with address Y, and burns it', async () => {
      const { nonce, message } = await challenge(alice.address);
      // Bob signs Alice's challenge and claims his own address.
      await expectError(await verify({ address: bob.address, signature: await bob.signMessage({ message }), nonce }), 401, 'ADDRESS_MISMATCH');
      await expectError(await verify({ address: alice.address, signature: await alice.signMessage({ message }), nonce }), 401, 'INVALID_NONCE');
    });

    it('refuses a wrong address with the right signature', async () => {
      const { nonce, message } = await challenge(alice.address);
      await expectError(await verify({ address: bob.address, signature: await alice.signMessage({ message }), nonce }), 401, 'ADDRESS_MISMATCH');
    });

    const tampers: Array<[string, (m: string) => string]> = [
      ['domain', (m) => m.replace(/^[^ ]+ wants/, 'http://evil.example wants')],
      ['URI', (m) => m.replace(/^URI: .*$/m, 'URI: https://evil.example')],
      ['chain id', (m) => m.replace('Chain ID: 1', 'Chain ID: 137')],
      ['address', (m) => m.replace(alice.address, bob.address)],
      ['statement', (m) => m.replace(SIWE_STATEMENT, 'Transfer everything.')],
      ['issued-at', (m) => m.replace(/^Issued At: .*$/m, `Issued At: ${new Date(Date.now() + 3_600_000).toISOString()}`)],
      ['expiration', (m) => m.replace(/^Expiration Time: .*$/m, 'Expiration Time: 2999-01-01T00:00:00.000Z')],
      ['nonce', (m) => m.replace(/^Nonce: .*$/m, 'Nonce: 00000000000000000000000000000000')],
      ['an added field', (m) => `${m}\nResources:\n- https://evil.example`],
    ];
    it.each(tampers)('refuses a signature over a message with a tampered %s', async (_field, tamper) => {
      const { nonce, message } = await challenge(alice.address);
      const tampered = tamper(message);
      expect(tampered).not.toBe(message);
      await expectError(await verify({ address: alice.address, signature: await alice.signMessage({ message: tampered }), nonce }), 401, 'INVALID_SIGNATURE');
    });

    it('refuses a reused nonce', async () => {
      const { nonce, message } = await challenge(alice.address);
      const body = { address: alice.address, signature: await alice.signMessage({ message }), nonce };
      expect((await verify(body)).status).toBe(200);
      await expectError(await verify(body), 401, 'INVALID_NONCE');
    });

    it('refuses an unknown nonce', async () => {
      const signature = await alice.signMessage({ message: 'anything' });
      await expectError(await verify({ address: alice.address, signature, nonce: randomBytes(16).toString('hex') }), 401, 'INVALID_NONCE');
    });

    it('gives exactly one token pair to 10 concurrent verifies of one nonce', async () => {
      const { nonce, message } = await challenge(alice.address);
      const body = { address: alice.address, signature: await alice.signMessage({ message }), nonce };
      const answers = await Promise.all(Array.from({ length: 10 }, () => verify(body)));
      const statuses = answers.map((r) => r.status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(1);
      expect(statuses.filter((s) => s === 401)).toHaveLength(9);
    });

    it.each([
      ['not hex', 'zz'],
      ['hex without 0x', 'ab'.repeat(65)],
      ['non-hex digits', `0x${'g'.repeat(130)}`],
      ['an odd number of digits', `0x${'a'.repeat(131)}`],
      ['empty', '0x'],
      ['1 byte', '0x1b'],
      ['64 bytes (one short)', `0x${'ab'.repeat(64)}`],
      ['over 16 KiB', `0x${'ab'.repeat(16 * 1024 + 1)}`],
      ['a number', 42],
    ])('refuses a malformed signature (%s) with 400, without burning the nonce', async (_name, signature) => {
      const { nonce, message } = await challenge(alice.address);
      await expectError(await verify({ address: alice.address, signature, nonce }), 400, 'VALIDATION_FAILED');
      expect((await verify({ address: alice.address, signature: await alice.signMessage({ message }), nonce })).status).toBe(200);
    });

    it.each([
      ['too short', 'abc'],
      ['with a dash', 'abcd-efgh-ijkl'],
      ['too long', 'a'.repeat(129)],
    ])('refuses a malformed nonce (%s) with 400', async (_name, nonce) => {
      await expectError(await verify({ address: alice.address, signature: await alice.signMessage({ message: 'x' }), nonce }), 400, 'VALIDATION_FAILED');
    });

    it('refuses missing fields with 400', async () => {
      await expectError(await verify({ address: alice.address }), 400, 'VALIDATION_FAILED');
      await expectError(await verify({}), 400, 'VALIDATION_FAILED');
    });

    it('answers 401, never 500, for 65-byte signatures that are not valid ECDSA', async () => {
      for (const bad of [`0x${'00'.repeat(65)}`, `0x${'ff'.repeat(65)}`]) {
        const { nonce } = await challenge(alice.address);
        await expectError(await verify({ address: alice.address, signature: bad, nonce }), 401, 'INVALID_SIGNATURE');
      }
      const { nonce, message } = await challenge(alice.address);
      const good = await alice.signMessage({ message });
      const badV = `${good.slice(0, -2)}05`;
      await expectError(await verify({ address: alice.address, signature: badV, nonce }), 401, 'INVALID_SIGNATURE');
    });

    it('fails closed with 503 for a smart-wallet signature when no RPC_URL is configured', async () => {
      const { nonce, message } = await challenge(alice.address);
      const longer = `${await bob.signMessage({ message })}${'ab'.repeat(32)}`;
      await expectError(await verify({ address: alice.address, signature: longer, nonce }), 503, 'SMART_WALLET_UNSUPPORTED');
      // Burnt as well: a retry needs a new challenge.
      await expectError(await verify({ address: alice.address, signature: await alice.signMessage({ message }), nonce }), 401, 'INVALID_NONCE');
    });
  });

  describe('domain module: injected time, configuration and concurrency', () => {
    const db = () => account.services.store.db;
    const config = () => account.services.config;

    it('refuses an expired nonce over HTTP', async () => {
      const issued = await issueChallenge({ db: db(), config: config(), address: alice.address, now: new Date(Date.now() - CHALLENGE_TTL_MS - 1000) });
      const signature = await alice.signMessage({ message: issued.message });
      await expectError(await verify({ address: alice.address, signature, nonce: issued.nonce }), 401, 'NONCE_EXPIRED');
    });

    it('holds exactly until issued-at + 5 minutes', async () => {
      const now = new Date();
      const sign = async () => {
        const issued = await issueChallenge({ db: db(), config: config(), address: alice.address, now });
        return { address: alice.address, nonce: issued.nonce, signature: await alice.signMessage({ message: issued.message }) };
      };
      const lastMoment = new Date(now.getTime() + CHALLENGE_TTL_MS - 1);
      await expect(verifySignIn({ db: db(), config: config(), input: await sign(), now: lastMoment, rpc: undefined })).resolves.toEqual({
        address: alice.address.toLowerCase(),
        kind: 'eoa',
        requestedBy: null,
      });
      const expiry = new Date(now.getTime() + CHALLENGE_TTL_MS);
      await expect(verifySignIn({ db: db(), config: config(), input: await sign(), now: expiry, rpc: undefined })).rejects.toMatchObject({
        appCode: 'NONCE_EXPIRED',
      });
    });

    it('refuses a challenge issued in the future (clock skew beyond a minute)', async () => {
      const issued = await issueChallenge({ db: db(), config: config(), address: alice.address, now: new Date(Date.now() + 2 * 60_000) });
      const signature = await alice.signMessage({ message: issued.message });
      await expectError(await verify({ address: alice.address, signature, nonce: issued.nonce }), 401, 'CHALLENGE_INVALID');
    });

    it.each([
      ['chain id', () => ({ walletChainId: 137 })],
      ['frontend (domain and URI)', () => ({ frontendUrl: 'https://app.example.com' })],
      ['URI only (same domain)', () => ({ frontendUrl: `${config().frontendUrl}/app` })],
    ])('refuses a challenge when the %s changed since it was issued', async (_name, change) => {
      const issued = await issueChallenge({ db: db(), config: config(), address: alice.address, now: new Date() });
      const input = { address: alice.address, nonce: issued.nonce, signature: await alice.signMessage({ message: issued.message }) };
      await expect(verifySignIn({ db: db(), config: { ...config(), ...change() }, input, now: new Date(), rpc: undefined })).rejects.toMatchObject({
        status: 401,
        appCode: 'CHALLENGE_INVALID',
      });
    });

    it('never trusts a stored challenge that differs from what the service issues', async () => {
      const issued = await issueChallenge({ db: db(), config: config(), address: alice.address, now: new Date() });
      const altered = issued.message.replace(/^Expiration Time: .*$/m, 'Expiration Time: 2999-01-01T00:00:00.000Z');
      await db().walletNonce.update({ where: { nonce: issued.nonce }, data: { message: altered } });
      const signature = await alice.signMessage({ message: altered });
      await expectError(await verify({ address: alice.address, signature, nonce: issued.nonce }), 401, 'CHALLENGE_INVALID');
    });

    it('lets exactly one of 10 simultaneous verifications of one nonce through (all read it before any consumes it)', async () => {
      const issued = await issueChallenge({ db: db(), config: config(), address: alice.address, now: new Date() });
      const input = { address: alice.address, nonce: issued.nonce, signature: await alice.signMessage({ message: issued.message }) };
      const outcomes = await Promise.allSettled(
        Array.from({ length: 10 }, () => verifySignIn({ db: db(), config: config(), input, now: new Date(), rpc: undefined })),
      );
      expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
      const refusals = outcomes.flatMap((o) => (o.status === 'rejected' ? [(o.reason as { appCode: string }).appCode] : []));
      expect(refusals).toEqual(Array(9).fill('INVALID_NONCE'));
    });

    it('sweeps expired challenges when issuing new ones', async () => {
      const old = await issueChallenge({ db: db(), config: config(), address: alice.address, now: new Date(Date.now() - 2 * CHALLENGE_TTL_MS) });
      await challenge(alice.address);
      expect(await db().walletNonce.findUnique({ where: { nonce: old.nonce } })).toBeNull();
    });
  });

  describe('guest upgrade', () => {
    const guest = async (deviceId: string) => (await (await post('/auth/guest', { device_id: testDeviceId(deviceId) })).json()) as Pair;

    it('attaches the wallet to the signed-in guest in place (still on guest terms: a wallet vouches for nobody)', async () => {
      const g = await guest(`wallet-upgrade-${kind}`);
      const before = await userOf(g);
      expect(before.guest).toBe(true);
      const wallet = newWallet();
      const res = await signIn(wallet, wallet.address, { authorization: `Bearer ${g.access_token}` });
      expect(res.status).toBe(200);
      const after = await userOf((await res.json()) as Pair);
      expect(after).toMatchObject({ user_id: before.user_id, guest: true });
      expect((await account.services.store.db.user.findUniqueOrThrow({ where: { id: before.user_id } })).tier).toBe('unverified');
      // The wallet alone now signs into the same (former guest) account.
      expect((await userOf((await (await signIn(wallet)).json()) as Pair)).user_id).toBe(before.user_id);
    });

    it('answers 409 IDENTITY_IN_USE when the wallet already belongs to another account', async () => {
      const owner = newWallet();
      expect((await signIn(owner)).status).toBe(200);
      const g = await guest(`wallet-conflict-${kind}`);
      await expectError(await signIn(owner, owner.address, { authorization: `Bearer ${g.access_token}` }), 409, 'IDENTITY_IN_USE');
      expect((await userOf(g)).guest).toBe(true);
    });

    it('refuses an invalid Authorization header rather than ignoring it, on the challenge and on the verify', async () => {
      const bad = { authorization: 'Bearer not.a.token' };
      const wallet = newWallet();
      expect((await post('/auth/wallet/challenge', { address: wallet.address }, bad)).status).toBe(401);
      const { nonce, message } = await challenge(wallet.address);
      expect((await verify({ address: wallet.address, signature: await wallet.signMessage({ message }), nonce }, bad)).status).toBe(401);
    });
  });

  describe('over tRPC', () => {
    const client = (headers: Record<string, string> = {}) =>
      createTRPCClient<AccountRouter>({ links: [httpLink({ url: `${account.url}/trpc`, transformer: superjson, headers })] });

    it('runs the same flow and reports the same error codes', async () => {
      const trpc = client();
      const wallet = newWallet();
      const { nonce, message } = await trpc.auth.wallet.challenge.mutate({ address: wallet.address });
      const signature = await wallet.signMessage({ message });
      const pair = await trpc.auth.wallet.verify.mutate({ address: wallet.address, signature, nonce });
      expect(pair.token_type).toBe('bearer');
      const me = await client({ authorization: `Bearer ${pair.access_token}` }).tokens.me.query();
      expect(me.guest).toBe(true);
      const replay = await trpc.auth.wallet.verify.mutate({ address: wallet.address, signature, nonce }).catch((e: unknown) => e);
      expect(replay).toBeInstanceOf(TRPCClientError);
      expect((replay as TRPCClientError<AccountRouter>).data).toMatchObject({ code: 'INVALID_NONCE', httpStatus: 401 });
      const malformed = await trpc.auth.wallet.challenge.mutate({ address: '0xnope' }).catch((e: unknown) => e);
      expect((malformed as TRPCClientError<AccountRouter>).data).toMatchObject({ code: 'VALIDATION_FAILED', httpStatus: 400 });
    });
  });

  it('is described in the OpenAPI document', async () => {
    const doc = (await (await fetch(`${api}/openapi.json`)).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/auth/wallet/challenge', '/auth/wallet/verify']));
  });
});
