/**
 * Taking over someone else's account through a sign-in flow they did not start (docs/security.md,
 * "Whose account a sign-in joins"). Each test is an attack that succeeds when its protection is
 * taken out:
 * - a stranger's e-mail link or code, presented with a guest's token (the web client sends it),
 *   attached the stranger's address to the guest: the stranger then signed in to the guest's
 *   account, chats, files and agent included;
 * - the same with a wallet challenge, and with an OAuth one-time code the guest's token adopted;
 * - an OAuth code fed to another browser signed that browser in to the attacker's account (login CSRF);
 * - a native ID token worked again and again, at any age, without the nonce it was minted with.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenPair as Pair } from '@contracts/account/tokens.js';
import { newWallet } from '../support/account-api.js';
import { testDeviceId } from '../support/devices.js';
import { MOBILE_CLIENT_IDS, signInThroughBrowser, startOAuthStack, type OAuthStack } from '../support/oauth-stack.js';
import { signInSecrets, startSmtpSink, type SmtpSink } from '../support/smtp.js';

describe('a sign-in flow joins only the account that started it', () => {
  let stack: OAuthStack;
  let sink: SmtpSink;
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${stack.api}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const pairOf = async (res: Response): Promise<Pair> => {
    const text = await res.text();
    expect(res.status, text).toBe(200);
    return JSON.parse(text) as Pair;
  };
  const me = async (pair: Pair) =>
    (await (await fetch(`${stack.api}/auth/me`, { headers: { authorization: `Bearer ${pair.access_token}` } })).json()) as { user_id: string; guest: boolean };
  const bearer = (pair: Pair) => ({ authorization: `Bearer ${pair.access_token}` });
  const guest = async () => pairOf(await post('/auth/guest', { device_id: testDeviceId(`takeover-${randomBytes(4).toString('hex')}`) }));
  const address = (tag: string) => `${tag}-${randomBytes(4).toString('hex')}@example.com`;
  /** POST /auth/login/email (asked by the account of `headers`, if any), and the secrets of the real mail. */
  const askMail = async (email: string, headers: Record<string, string> = {}) => {
    expect((await post('/auth/login/email', { email }, headers)).status).toBe(200);
    return signInSecrets(await sink.next(email));
  };

  beforeAll(async () => {
    sink = await startSmtpSink();
    stack = await startOAuthStack('pglite', { SMTP_URL: sink.url });
  });
  afterAll(async () => {
    await stack?.stop();
    await sink?.close();
  });

  describe('e-mail', () => {
    it("a stranger's sign-in link opened by a guest does not join the stranger's address to the guest, so the stranger cannot sign in to it", async () => {
      const victim = await guest();
      const victimId = (await me(victim)).user_id;
      const strangerAddress = address('stranger-link');
      const { token } = await askMail(strangerAddress);
      // The guest's web client opens the link with the guest's token.
      const opened = await pairOf(await post('/auth/verify-magic-link', { token }, bearer(victim)));
      expect((await me(opened)).user_id).not.toBe(victimId);
      expect(await me(victim)).toEqual({ ...(await me(victim)), user_id: victimId, guest: true });
      // The stranger signs in with the address: their own account, not the guest's.
      const { code } = await askMail(strangerAddress);
      const stranger = await pairOf(await post('/auth/verify-magic-link', { email: strangerAddress, code }));
      expect((await me(stranger)).user_id).not.toBe(victimId);
    });

    it("a stranger's 6-digit code typed by a guest does not upgrade the guest", async () => {
      const victim = await guest();
      const victimId = (await me(victim)).user_id;
      const strangerAddress = address('stranger-code');
      const { code } = await askMail(strangerAddress);
      const typed = await pairOf(await post('/auth/verify-magic-link', { email: strangerAddress, code }, bearer(victim)));
      expect((await me(typed)).user_id).not.toBe(victimId);
      expect((await me(victim)).guest).toBe(true);
    });

    it('a mail asked for by another signed-in account joins neither the presenting account nor the asking one', async () => {
      const victim = await guest();
      const asker = await guest();
      const email = address('other-asker');
      const { token } = await askMail(email, bearer(asker));
      const opened = await pairOf(await post('/auth/verify-magic-link', { token }, bearer(victim)));
      const openedId = (await me(opened)).user_id;
      expect(openedId).not.toBe((await me(victim)).user_id);
      expect(openedId).not.toBe((await me(asker)).user_id);
      expect([(await me(victim)).guest, (await me(asker)).guest]).toEqual([true, true]);
    });

    it('the account that asked for the mail is still upgraded in place by its own link', async () => {
      const owner = await guest();
      const ownerId = (await me(owner)).user_id;
      const { token } = await askMail(address('own-link'), bearer(owner));
      expect(await me(await pairOf(await post('/auth/verify-magic-link', { token }, bearer(owner))))).toMatchObject({ user_id: ownerId, guest: false });
    });
  });

  describe('wallet', () => {
    it("a stranger's signed wallet challenge submitted with a guest's token does not join the stranger's wallet to the guest", async () => {
      const victim = await guest();
      const victimId = (await me(victim)).user_id;
      const strangerWallet = newWallet();
      const { nonce, message } = (await (await post('/auth/wallet/challenge', { address: strangerWallet.address })).json()) as {
        nonce: string;
        message: string;
      };
      const signature = await strangerWallet.signMessage({ message });
      const submitted = await pairOf(await post('/auth/wallet/verify', { address: strangerWallet.address, signature, nonce }, bearer(victim)));
      expect((await me(submitted)).user_id).not.toBe(victimId);
      expect((await me(victim)).guest).toBe(true);
    });
  });

  describe('OAuth one-time code', () => {
    it("a stranger's OAuth code exchanged with a guest's token is not adopted by the guest", async () => {
      const victim = await guest();
      const victimId = (await me(victim)).user_id;
      const flow = await signInThroughBrowser(stack, 'idpb', { login: `stranger-${randomBytes(3).toString('hex')}` });
      // Even with the flow's own cookie, the guest's token joins nothing: the guest did not start the flow.
      const exchanged = await pairOf(await post('/auth/exchange', { code: flow.code }, { cookie: flow.cookie, ...bearer(victim) }));
      expect((await me(exchanged)).user_id).not.toBe(victimId);
      expect((await me(victim)).guest).toBe(true);
    });

    it("login CSRF: an attacker's OAuth code exchanged in the victim's browser (no exchange cookie) is refused", async () => {
      const attacker = await signInThroughBrowser(stack, 'idpa', { login: `csrf-${randomBytes(3).toString('hex')}` });
      const res = await post('/auth/exchange', { code: attacker.code });
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject({ code: 'INVALID_AUTH_CODE' });
      // The attacker's own browser still can (the code was not spent by the refused try).
      expect((await post('/auth/exchange', { code: attacker.code }, { cookie: attacker.cookie })).status).toBe(200);
    });

    it("an exchange cookie of the victim's own flow does not unlock the attacker's code", async () => {
      const victimFlow = await signInThroughBrowser(stack, 'idpa', { login: `victim-${randomBytes(3).toString('hex')}` });
      const attacker = await signInThroughBrowser(stack, 'idpb', { login: `csrf2-${randomBytes(3).toString('hex')}` });
      const res = await post('/auth/exchange', { code: attacker.code }, { cookie: victimFlow.cookie });
      expect(res.status).toBe(401);
    });
  });

  describe('native ID token', () => {
    const now = () => Math.floor(Date.now() / 1000);
    const token = (claims: Record<string, unknown> = {}) =>
      stack.a.signIdToken({ sub: `native-${randomBytes(4).toString('hex')}`, aud: MOBILE_CLIENT_IDS[0], ...claims });
    const mobile = (body: unknown) => post('/auth/mobile/idpa', body);
    const refused = async (res: Response, why: RegExp) => {
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({ code: 'INVALID_ID_TOKEN', detail: expect.stringMatching(why) });
    };

    it('a captured ID token replayed a second time is refused', async () => {
      const captured = await token();
      await pairOf(await mobile({ id_token: captured }));
      await refused(await mobile({ id_token: captured }), /already used/);
    });

    it('of 5 concurrent uses of one ID token exactly one signs in', async () => {
      const captured = await token();
      const statuses = (await Promise.all(Array.from({ length: 5 }, () => mobile({ id_token: captured })))).map((r) => r.status).sort();
      expect(statuses).toEqual([200, 401, 401, 401, 401]);
    });

    it('an ID token issued more than 10 minutes ago (and still unexpired) is refused', async () => {
      await refused(await mobile({ id_token: await token({ iat: now() - 11 * 60, exp: now() + 3600 }) }), /issued more than 10 minutes ago/);
      await pairOf(await mobile({ id_token: await token({ iat: now() - 9 * 60, exp: now() + 3600 }) }));
    });

    it('an ID token minted with a nonce, presented without it, is refused', async () => {
      const minted = await token({ nonce: 'app-nonce-1' });
      await refused(await mobile({ id_token: minted }), /nonce/);
      await pairOf(await mobile({ id_token: minted, nonce: 'app-nonce-1' }));
    });
  });
});
