/**
 * A stranger against someone else's e-mail sign-in (docs/security.md, "E-mail codes: no lockout,
 * no guessing"). Each test is an attack that worked before the fix:
 * - lockout: every new sign-in request voided the owner's live code, and 5 wrong guesses killed
 *   it, so anyone could keep an address out of code sign-in with a few requests;
 * - guessing: each new mail reset the 5-guess counter, so asking for mail between guesses gave
 *   about 1,200 guesses a day per address.
 * Counters run in memory on PGlite, and in Redis on PostgreSQL when both are reachable. Redis
 * outlives the run, so every address and client here is a fresh random one.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresReachable } from '../support/postgres.js';
import { redisReachable } from '../support/redis.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';
import { signInSecrets, startSmtpSink, type SmtpSink } from '../support/smtp.js';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const randomIpv4 = () => `10.${randomBytes(3).join('.')}`;
const address = (tag: string) => `${tag}-${hex(4)}@example.com`;

const backends = [
  { name: 'PGlite, counters in memory', store: 'pglite' as const, env: {} as Record<string, string> },
  ...((await postgresReachable()) && (await redisReachable())
    ? [{ name: 'PostgreSQL, counters in Redis', store: 'postgres' as const, env: { REDIS_URL } }]
    : []),
];

interface Answer {
  status: number;
  body: { code?: string; detail?: string; access_token?: string };
  retryAfter: number;
}

describe.each(backends)('e-mail codes on $name', ({ store, env }) => {
  let account: TestAccount;
  let sink: SmtpSink;
  beforeAll(async () => {
    sink = await startSmtpSink();
    // The real limits (multiplier 1); every request comes from its own client, so only the per-address limits meet.
    account = await startTestAccount(store, { RATE_LIMIT_MULTIPLIER: '1', TRUST_PROXY: 'loopback', SMTP_URL: sink.url, ...env });
  });
  afterAll(async () => {
    await account?.stop();
    await sink?.close();
  });

  async function post(path: string, body: unknown): Promise<Answer> {
    const res = await fetch(`${account.url}/api/v1${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': randomIpv4() },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Answer['body'], retryAfter: Number(res.headers.get('retry-after')) };
  }

  /** Anyone asks for a sign-in mail to `email`; the inbox's owner gets it. */
  const requestMail = async (email: string) => {
    expect((await post('/auth/login/email', { email })).status).toBe(200);
    return signInSecrets(await sink.next(email));
  };
  const verify = (body: unknown) => post('/auth/verify-magic-link', body);
  /** Six-digit codes none of which is one of `live`. */
  const wrongCodes = (count: number, live: string[]) => {
    const codes: string[] = [];
    for (let n = 0; codes.length < count; n++) {
      const code = String((Number(live[0] ?? 0) + 1 + n) % 1_000_000).padStart(6, '0');
      if (!live.includes(code)) codes.push(code);
    }
    return codes;
  };

  it("lockout by repeated requests: a stranger's new sign-in mails to an address leave the owner's code and link working", async () => {
    const email = address('owner');
    const owners = await requestMail(email);
    const strangers = [];
    for (let i = 0; i < 3; i++) strangers.push(await requestMail(email));
    expect((await verify({ email, code: owners.code })).status).toBe(200);
    // The owner's sign-in spent the stranger's mails too (below); a new one works.
    expect((await verify({ token: strangers[2]!.token })).status).toBe(401);
    const second = await requestMail(email);
    expect((await verify({ token: second.token })).status).toBe(200);
  });

  it('a sign-in with one mail spends every other live code and link of the address', async () => {
    const email = address('spent');
    const mails = [await requestMail(email), await requestMail(email), await requestMail(email)];
    const other = await requestMail(address('untouched'));
    expect((await verify({ email, code: mails[1]!.code })).status).toBe(200);
    expect(await verify({ email, code: mails[0]!.code })).toMatchObject({ status: 401, body: { code: 'INVALID_CODE' } });
    expect(await verify({ token: mails[2]!.token })).toMatchObject({ status: 401, body: { code: 'INVALID_LINK' } });
    expect(await verify({ email, code: mails[2]!.code })).toMatchObject({ status: 401, body: { code: 'INVALID_CODE' } });
    // A link signs in the same way, and another address's mail is not touched.
    const more = [await requestMail(email), await requestMail(email)];
    expect((await verify({ token: more[0]!.token })).status).toBe(200);
    expect(await verify({ email, code: more[1]!.code })).toMatchObject({ status: 401, body: { code: 'INVALID_CODE' } });
    expect((await verify({ token: other.token })).status).toBe(200);
  });

  it("lockout by wrong guesses: a stranger's 5 wrong codes do not kill the owner's live code", async () => {
    const email = address('guessed');
    const { code } = await requestMail(email);
    for (const wrong of wrongCodes(5, [code])) expect(await verify({ email, code: wrong })).toMatchObject({ status: 401, body: { code: 'INVALID_CODE' } });
    expect((await verify({ email, code })).status).toBe(200);
  });

  it('guessing across codes: a new mail does not reset the count; the 11th code tried in an hour is 429 CODE_ENTRY_PAUSED, the link still signs in', async () => {
    const known = address('known');
    await account.services.store.db.user.create({
      data: { email: known, identities: { create: { provider: 'email', subject: known, email: known, emailVerified: true } } },
    });
    const unknown = address('unknown');
    const refusals: Answer[] = [];
    for (const email of [known, unknown]) {
      const first = await requestMail(email);
      for (const wrong of wrongCodes(5, [first.code])) expect((await verify({ email, code: wrong })).status).toBe(401);
      // A fresh mail used to bring a fresh budget of 5.
      const second = await requestMail(email);
      for (const wrong of wrongCodes(10, [first.code, second.code]).slice(5)) expect((await verify({ email, code: wrong })).status).toBe(401);
      // Paused: the right code is refused too, so the 11th try tells a guesser nothing.
      const eleventh = await verify({ email, code: second.code });
      expect(eleventh).toMatchObject({ status: 429, body: { code: 'CODE_ENTRY_PAUSED' } });
      expect(eleventh.retryAfter).toBeGreaterThan(60); // the hour's window
      expect(eleventh.retryAfter).toBeLessThanOrEqual(3600);
      expect(eleventh.body.detail).toMatch(/link in the sign-in mail still works/);
      refusals.push(eleventh);
      // The owner still gets in with a link, the older mail's too (which spends the newer one).
      expect((await verify({ token: first.token })).status).toBe(200);
      expect((await verify({ token: second.token })).status).toBe(401);
    }
    const shape = (x: Answer) => ({ status: x.status, code: x.body.code, detail: x.body.detail?.replace(/\d+/g, 'N'), keys: Object.keys(x.body).sort() });
    expect(shape(refusals[0]!)).toEqual(shape(refusals[1]!));
    // Another address is not paused.
    const other = address('other');
    const { code } = await requestMail(other);
    expect((await verify({ email: other, code })).status).toBe(200);
  });

  it('20 concurrent guesses at one address: exactly 10 are tried, the rest are 429 CODE_ENTRY_PAUSED', async () => {
    const email = address('burst');
    const { code, token } = await requestMail(email);
    const answers = await Promise.all(wrongCodes(20, [code]).map((wrong) => verify({ email, code: wrong })));
    const count = (status: number) => answers.filter((a) => a.status === status).length;
    expect([count(401), count(429)]).toEqual([10, 10]);
    expect((await verify({ email, code })).status).toBe(429);
    expect((await verify({ token })).status).toBe(200);
  });

  it('a right code costs no guess: 9 wrong codes, a right one, then one more wrong one is still tried', async () => {
    const email = address('right');
    const first = await requestMail(email);
    const second = await requestMail(email);
    const live = [first.code, second.code];
    const wrong = wrongCodes(10, live);
    for (const guess of wrong.slice(0, 9)) expect((await verify({ email, code: guess })).status).toBe(401);
    expect((await verify({ email, code: first.code })).status).toBe(200);
    expect(await verify({ email, code: wrong[9] })).toMatchObject({ status: 401, body: { code: 'INVALID_CODE' } });
    expect(await verify({ email, code: second.code })).toMatchObject({ status: 429, body: { code: 'CODE_ENTRY_PAUSED' } });
  });
});
