/**
 * A hostile client against the sign-in endpoints (docs/api.md, "Abuse limits"): each test is an
 * attack that succeeds when its protection is taken out.
 * - a /64 of IPv6 addresses, or an IPv4 address spelled as mapped IPv6, is one client;
 * - new guests are capped per client per day and service-wide per hour, returning devices never;
 * - one inbox gets at most 10 sign-in mails an hour, however many addresses ask;
 * - a short device id is refused (it would open whoever's guest used it first);
 * - with a CAPTCHA on, guest and e-mail sign-in need a token a real siteverify server accepts.
 * The counters run in memory, and again in Redis when one is reachable. Redis outlives the run,
 * so there every client is a fresh random one, and a service-wide count is asserted as a ceiling.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createAccountClient, errorCode, newDeviceId } from '../../client/sdk/account.js';
import { loadAccountConfig } from '../../server/account/config.js';
import { clientKey } from '../../server/account/ratelimit/client-key.js';
import { redisReachable } from '../support/redis.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';
import { startSmtpSink, type SmtpSink } from '../support/smtp.js';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const hex = (bytes: number) => randomBytes(bytes).toString('hex');
/** A random /64 (documentation prefix); `host` picks an address inside it. */
const randomPrefix = () => `2001:db8:${hex(2)}:${hex(2)}`;
const randomIpv4 = () => `10.${randomBytes(3).join('.')}`;

interface Answer {
  status: number;
  body: { code?: string; detail?: string; issues?: Array<{ path: string; message: string }> };
  retryAfter: number;
}

async function post(url: string, body: unknown, from: string, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': from, ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Answer['body'], retryAfter: Number(res.headers.get('retry-after')) };
}

const guestSignIn = (account: TestAccount, deviceId: string, from: string, headers?: Record<string, string>) =>
  post(`${account.url}/api/v1/auth/guest`, { device_id: deviceId }, from, headers);
const mailSignIn = (account: TestAccount, email: string, from: string, headers?: Record<string, string>) =>
  post(`${account.url}/api/v1/auth/login/email`, { email }, from, headers);

const stores = [{ name: 'memory', env: {} as Record<string, string> }, ...((await redisReachable()) ? [{ name: 'Redis', env: { REDIS_URL } }] : [])];

describe('client keys: one bucket per IPv4 address, per IPv6 /64', () => {
  it.each([
    ['2001:db8:1:2:aaaa::1', 64, '2001:db8:1:2:0:0:0:0/64'],
    ['2001:DB8:1:2:ffff:ffff:ffff:ffff', 64, '2001:db8:1:2:0:0:0:0/64'],
    ['2001:db8:1:2::1%eth0', 64, '2001:db8:1:2:0:0:0:0/64'],
    ['2001:db8:1:2:3:4:5:6', 48, '2001:db8:1:0:0:0:0:0/48'],
    ['2001:db8:1:2:3:4:5:6', 56, '2001:db8:1:0:0:0:0:0/56'],
    ['2001:db8:1:2:3:4:5:6', 128, '2001:db8:1:2:3:4:5:6/128'],
    ['::ffff:1.2.3.4', 64, '1.2.3.4'],
    ['::ffff:102:304', 64, '1.2.3.4'],
    ['1.2.3.4', 64, '1.2.3.4'],
    ['::1', 64, '0:0:0:0:0:0:0:0/64'],
    ['not-an-address', 64, 'not-an-address'],
  ])('%s on /%i → %s', (address, subnet, key) => {
    expect(clientKey(address, subnet)).toBe(key);
  });

  it('IPV6_SUBNET is 64 by default and 32..128', () => {
    expect(loadAccountConfig({}).ipv6Subnet).toBe(64);
    expect(loadAccountConfig({ IPV6_SUBNET: '48' }).ipv6Subnet).toBe(48);
    expect(() => loadAccountConfig({ IPV6_SUBNET: '31' })).toThrow(/IPV6_SUBNET/);
    expect(() => loadAccountConfig({ IPV6_SUBNET: '129' })).toThrow(/IPV6_SUBNET/);
  });
});

describe.each(stores)('abuse limits, counters in $name', ({ name, env }) => {
  const base = { RATE_LIMIT_MULTIPLIER: '1', TRUST_PROXY: 'loopback', ...env };
  let open: TestAccount;
  let capped: TestAccount;
  let paused: TestAccount;
  let sink: SmtpSink;
  beforeAll(async () => {
    sink = await startSmtpSink();
    [open, capped, paused] = await Promise.all([
      startTestAccount('pglite', { ...base, SMTP_URL: sink.url }),
      startTestAccount('pglite', { ...base, GUEST_SIGNUPS_PER_DAY: '5' }),
      startTestAccount('pglite', { ...base, GUEST_SIGNUPS_PER_HOUR: '3' }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([open?.stop(), capped?.stop(), paused?.stop()]);
    await sink?.close();
  });

  it('11 guest sign-ins from 11 addresses of one /64 within a minute: the 11th is 429; another /64 passes', async () => {
    const prefix = randomPrefix();
    const statuses: number[] = [];
    for (let i = 1; i <= 10; i++) statuses.push((await guestSignIn(open, newDeviceId(), `${prefix}:${hex(2)}:${hex(2)}:${hex(2)}:${i}`)).status);
    expect(statuses).toEqual(Array(10).fill(200));
    const eleventh = await guestSignIn(open, newDeviceId(), `${prefix}:ffff:ffff:ffff:ffff`);
    expect(eleventh).toMatchObject({ status: 429, body: { code: 'RATE_LIMITED' } });
    expect(eleventh.retryAfter).toBeGreaterThan(0);
    expect((await guestSignIn(open, newDeviceId(), `${randomPrefix()}::1`)).status).toBe(200);
  });

  it('an IPv4 address and the same address as mapped IPv6 (::ffff:a.b.c.d) share one bucket', async () => {
    const ip = randomIpv4();
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await guestSignIn(open, newDeviceId(), i % 2 ? ip : `::ffff:${ip}`)).status);
    expect(statuses).toEqual(Array(10).fill(200));
    expect((await guestSignIn(open, newDeviceId(), ip)).status).toBe(429);
    expect((await guestSignIn(open, newDeviceId(), `::ffff:${ip}`)).status).toBe(429);
  });

  it('GUEST_SIGNUPS_PER_DAY=5: the 6th new guest of a client is 429, returning devices pass and do not count', async () => {
    const from = randomIpv4();
    const devices = Array.from({ length: 6 }, () => newDeviceId());
    expect((await guestSignIn(capped, devices[0]!, from)).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await guestSignIn(capped, devices[0]!, from)).status).toBe(200);
    for (const device of devices.slice(1, 5)) expect((await guestSignIn(capped, device, from)).status).toBe(200);

    const sixth = await guestSignIn(capped, devices[5]!, from);
    expect(sixth).toMatchObject({ status: 429, body: { code: 'RATE_LIMITED' } });
    expect(sixth.retryAfter).toBeGreaterThan(3600); // the day's window, not the minute's
    expect(sixth.body.detail).toMatch(/e-mail, a provider or a wallet still works/);
    const db = capped.services.store.db;
    expect(await db.identity.count({ where: { provider: 'guest', subject: devices[5]! } })).toBe(0);

    expect((await guestSignIn(capped, devices[2]!, from)).status).toBe(200);
    expect((await guestSignIn(capped, newDeviceId(), randomIpv4())).status).toBe(200);
  });

  it('GUEST_SIGNUPS_PER_HOUR=3: past 3 new guests service-wide, 429 GUEST_SIGNUPS_PAUSED for everyone; returning devices pass', async () => {
    const answers: Answer[] = [];
    const returning = newDeviceId();
    const first = await guestSignIn(paused, returning, randomIpv4());
    answers.push(first);
    while (answers.length < 4 && answers.at(-1)!.status === 200) answers.push(await guestSignIn(paused, newDeviceId(), randomIpv4()));
    const passed = answers.filter((a) => a.status === 200).length;
    // Redis is shared with earlier runs within the hour: there, 3 is a ceiling.
    if (name === 'memory') expect(passed).toBe(3);
    else expect(passed).toBeLessThanOrEqual(3);
    const refusal = answers.at(-1)!;
    expect(refusal).toMatchObject({ status: 429, body: { code: 'GUEST_SIGNUPS_PAUSED' } });
    expect(refusal.retryAfter).toBeGreaterThan(0);
    expect(refusal.retryAfter).toBeLessThanOrEqual(3600);
    expect(refusal.body.detail).toMatch(/Signing in with e-mail, a provider or a wallet still works/);
    if (first.status === 200) expect((await guestSignIn(paused, returning, randomIpv4())).status).toBe(200);
  });

  describe('sign-in mail per address', () => {
    /** Lets the per-minute windows run out without waiting a minute. */
    let elapseMinute: (email: string) => Promise<void>;
    let redis: Redis | undefined;
    beforeAll(() => {
      if (name === 'memory') {
        // The server runs in this process: its in-memory windows read this clock.
        let now = Date.now();
        vi.useFakeTimers({ toFake: ['Date'], now });
        elapseMinute = async () => {
          now += 61_000;
          vi.setSystemTime(now);
        };
      } else {
        redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
        elapseMinute = async (email) => {
          await redis!.del(`rl:auth.login.email.address:${email}`);
        };
      }
    });
    afterAll(() => {
      vi.useRealTimers();
      redis?.disconnect();
    });

    const elevenMails = async (email: string) => {
      const statuses: number[] = [];
      for (let round = 0; round < 2; round++) {
        for (let i = 0; i < 5; i++) statuses.push((await mailSignIn(open, email, randomIpv4())).status);
        await elapseMinute(email);
      }
      expect(statuses).toEqual(Array(10).fill(200));
      return mailSignIn(open, email, `${randomPrefix()}::1`);
    };

    it('the 11th mail to one address within an hour, from rotating clients, is 429 — the same for a known and an unknown address', async () => {
      const known = `known-${hex(4)}@example.com`;
      await open.services.store.db.user.create({
        data: { email: known, identities: { create: { provider: 'email', subject: known, email: known, emailVerified: true } } },
      });
      const unknown = `unknown-${hex(4)}@example.com`;
      const [a, b] = [await elevenMails(known), await elevenMails(unknown)];
      for (const refusal of [a, b]) {
        expect(refusal).toMatchObject({ status: 429, body: { code: 'RATE_LIMITED' } });
        expect(refusal.retryAfter).toBeGreaterThan(60); // the hour's window: the minute's has run out
      }
      const shape = (x: Answer) => ({ status: x.status, code: x.body.code, detail: x.body.detail?.replace(/\d+/g, 'N'), keys: Object.keys(x.body).sort() });
      expect(shape(a)).toEqual(shape(b));
      // Another address is not affected.
      expect((await mailSignIn(open, `other-${hex(4)}@example.com`, randomIpv4())).status).toBe(200);
    });
  });
});

describe('device ids', () => {
  let account: TestAccount;
  beforeAll(async () => {
    account = await startTestAccount('pglite');
  });
  afterAll(() => account.stop());

  it('a device id under 16 characters is 400 VALIDATION_FAILED asking for a random or platform id', async () => {
    for (const short of ['1', 'test', 'serial-12345678']) {
      const res = await guestSignIn(account, short, '127.0.0.1');
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({
        code: 'VALIDATION_FAILED',
        issues: [{ path: 'device_id', message: expect.stringMatching(/at least 16 characters.*random id \(a UUID\)/) }],
      });
    }
    expect((await guestSignIn(account, 'x'.repeat(16), '127.0.0.1')).status).toBe(200);
  });

  it('the SDK makes device ids of 122 random bits', () => {
    const ids = new Set(Array.from({ length: 100 }, () => newDeviceId()));
    expect(ids.size).toBe(100);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});

/** A siteverify endpoint with the providers' contract: form-encoded secret, response, remoteip → `{success}`. */
async function startSiteverify(secret: string) {
  const seen: Array<Record<string, string>> = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const form = Object.fromEntries(new URLSearchParams(body));
      seen.push(form);
      const answer =
        req.method !== 'POST' || req.headers['content-type'] !== 'application/x-www-form-urlencoded;charset=UTF-8'
          ? { success: false, 'error-codes': ['bad-request'] }
          : form.secret !== secret
            ? { success: false, 'error-codes': ['invalid-input-secret'] }
            : form.response === 'solved-token'
              ? { success: true, hostname: 'example.com' }
              : { success: false, 'error-codes': ['invalid-input-response'] };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/siteverify`, seen, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe('CAPTCHA', () => {
  const SECRET = `secret-${randomUUID()}`;
  let siteverify: Awaited<ReturnType<typeof startSiteverify>>;
  let account: TestAccount;
  let off: TestAccount;
  let wrongSecret: TestAccount;
  beforeAll(async () => {
    siteverify = await startSiteverify(SECRET);
    const captcha = { CAPTCHA_PROVIDER: 'turnstile', CAPTCHA_SITE_KEY: '0x4AAAAAAA-site-key', CAPTCHA_VERIFY_URL: siteverify.url, TRUST_PROXY: 'loopback' };
    [account, off, wrongSecret] = await Promise.all([
      startTestAccount('pglite', { ...captcha, CAPTCHA_SECRET: SECRET }),
      startTestAccount('pglite'),
      startTestAccount('pglite', { ...captcha, CAPTCHA_SECRET: 'not-our-secret' }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([account?.stop(), off?.stop(), wrongSecret?.stop()]);
    await siteverify?.close();
  });
  afterEach(() => {
    siteverify.seen.length = 0;
  });

  it('tells the web client whether it is on, and with which provider and site key', async () => {
    const config = async (a: TestAccount) => (await fetch(`${a.url}/api/v1/auth/captcha`)).json();
    expect(await config(account)).toEqual({ provider: 'turnstile', site_key: '0x4AAAAAAA-site-key' });
    expect(await config(off)).toEqual({ provider: null, site_key: null });
  });

  it.each([
    ['guest sign-in', (a: TestAccount, headers?: Record<string, string>) => guestSignIn(a, newDeviceId(), '203.0.113.50', headers)],
    ['e-mail sign-in', (a: TestAccount, headers?: Record<string, string>) => mailSignIn(a, `captcha-${hex(4)}@example.com`, '203.0.113.50', headers)],
  ])('%s: no token → 400 CAPTCHA_REQUIRED, a refused one → 400 CAPTCHA_INVALID, a solved one passes', async (_name, call) => {
    expect(await call(account)).toMatchObject({ status: 400, body: { code: 'CAPTCHA_REQUIRED' } });
    expect(siteverify.seen).toHaveLength(0);
    expect(await call(account, { 'x-captcha-response': 'made-up-token' })).toMatchObject({ status: 400, body: { code: 'CAPTCHA_INVALID' } });
    expect(await call(account, { 'x-captcha-response': 'x'.repeat(2049) })).toMatchObject({ status: 400, body: { code: 'CAPTCHA_INVALID' } });
    expect((await call(account, { 'x-captcha-response': 'solved-token' })).status).toBe(200);
    // The check went to the provider with our secret and the client's address.
    expect(siteverify.seen.at(-1)).toEqual({ secret: SECRET, response: 'solved-token', remoteip: '203.0.113.50' });
    // Off: nothing is asked of clients.
    expect((await call(off)).status).toBe(200);
  });

  it('the SDK sends the token over tRPC', async () => {
    const sdk = createAccountClient({ url: account.url });
    const refused = await sdk.signInAsGuest(newDeviceId()).catch((error: unknown) => error);
    expect(errorCode(refused)).toBe('CAPTCHA_REQUIRED');
    expect((await sdk.signInAsGuest(newDeviceId(), { captcha: 'solved-token' })).token_type).toBe('bearer');
    expect(await sdk.requestEmailSignIn(`sdk-${hex(4)}@example.com`, { captcha: 'solved-token' })).toMatchObject({ message: expect.any(String) });
  });

  it("a provider that refuses our secret → 503 CAPTCHA_UNAVAILABLE, not the client's fault", async () => {
    const res = await guestSignIn(wrongSecret, newDeviceId(), '203.0.113.51', { 'x-captcha-response': 'solved-token' });
    expect(res).toMatchObject({ status: 503, body: { code: 'CAPTCHA_UNAVAILABLE' } });
    expect(res.retryAfter).toBeGreaterThan(0);
  });

  // Last: the siteverify server goes away.
  it('the provider out of reach → 503 CAPTCHA_UNAVAILABLE with Retry-After; closed, never let through', async () => {
    await siteverify.close();
    const res = await guestSignIn(account, newDeviceId(), '203.0.113.52', { 'x-captcha-response': 'solved-token' });
    expect(res).toMatchObject({ status: 503, body: { code: 'CAPTCHA_UNAVAILABLE' } });
    expect(res.retryAfter).toBeGreaterThan(0);
  });

  it('configuration: a provider needs its secret and site key; the others need a provider', () => {
    expect(() => loadAccountConfig({ CAPTCHA_PROVIDER: 'turnstile', CAPTCHA_SITE_KEY: 'k' })).toThrow(/CAPTCHA_SECRET: is required/);
    expect(() => loadAccountConfig({ CAPTCHA_PROVIDER: 'hcaptcha', CAPTCHA_SECRET: 's' })).toThrow(/CAPTCHA_SITE_KEY: is required/);
    expect(() => loadAccountConfig({ CAPTCHA_SECRET: 's' })).toThrow(/CAPTCHA_SECRET: has no effect without CAPTCHA_PROVIDER/);
    expect(() => loadAccountConfig({ CAPTCHA_PROVIDER: 'recaptcha' })).toThrow(/CAPTCHA_PROVIDER/);
    expect(loadAccountConfig({ CAPTCHA_PROVIDER: 'hcaptcha', CAPTCHA_SECRET: 's', CAPTCHA_SITE_KEY: 'k' }).captcha?.verifyUrl).toBe(
      'https://api.hcaptcha.com/siteverify',
    );
    expect(loadAccountConfig({}).captcha).toBeUndefined();
  });
});
