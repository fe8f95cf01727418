import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { decodeJwt } from 'jose';
import { simpleParser } from 'mailparser';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAccount } from '../../server/account/app.js';
import { LOGIN_EMAIL_MESSAGE } from '../../server/account/auth/email/service.js';
import { loadAccountConfig } from '../../server/account/config.js';
import { accountStoreKinds } from '../support/postgres.js';
import { freePort, startTestAccount, tempDir, type TestAccount } from '../support/servers.js';
import { signInSecrets, startSmtpSink, type SmtpSink } from '../support/smtp.js';
import type { TokenPair as Pair } from '@contracts/account/tokens.js';
import { testDeviceId } from '../support/devices.js';

const kinds = await accountStoreKinds();

const unique = (tag: string) => `${tag}-${randomBytes(4).toString('hex')}@example.com`;

function client(base: string) {
  const post = (p: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${base}/api/v1${p}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const me = async (access: string) =>
    (await (await fetch(`${base}/api/v1/auth/me`, { headers: { authorization: `Bearer ${access}` } })).json()) as { user_id: string; guest: boolean };
  return { post, me };
}

describe.each(kinds)('e-mail sign-in on %s', (kind) => {
  let account: TestAccount;
  let sink: SmtpSink;
  let api: ReturnType<typeof client>;

  /** POST /auth/login/email (with `headers`: asked by that account), then the link token and the code from the real mail. */
  const requestCode = async (email: string, headers: Record<string, string> = {}) => {
    const res = await api.post('/auth/login/email', { email }, headers);
    expect(res.status).toBe(200);
    return signInSecrets(await sink.next(email));
  };
  const verify = (body: unknown, headers: Record<string, string> = {}) => api.post('/auth/verify-magic-link', body, headers);

  beforeAll(async () => {
    sink = await startSmtpSink();
    account = await startTestAccount(kind, { SMTP_URL: sink.url, MAIL_FROM: 'Sign-in <signin@accounts.test>', FRONTEND_URL: 'http://app.test:8080' });
    api = client(account.url);
  });
  afterAll(async () => {
    await account.stop();
    await sink.close();
  });

  it('mails one message with a frontend link and a 6-digit code; the code signs in and creates the account', async () => {
    const email = unique('first');
    const res = await api.post('/auth/login/email', { email: `  ${email.toUpperCase()} ` });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ message: LOGIN_EMAIL_MESSAGE });
    const mail = await sink.next(email);
    expect(mail.from?.value[0]?.address).toBe('signin@accounts.test');
    expect(mail.html).toContain('/auth/verify?token=');
    const { link, code } = signInSecrets(mail);
    expect(link).toMatch(/^http:\/\/app\.test:8080\/auth\/verify\?token=[A-Za-z0-9_-]{43}$/);
    expect(code).toMatch(/^\d{6}$/);

    const ok = await verify({ email, code });
    expect(ok.status).toBe(200);
    const pair = (await ok.json()) as Pair;
    expect(pair).toEqual({ access_token: expect.any(String), refresh_token: expect.any(String), token_type: 'bearer', expires_in: 900 });
    expect(decodeJwt(pair.access_token).guest).toBeUndefined();
    const user = await api.me(pair.access_token);
    expect(user.guest).toBe(false);

    // Second sign-in, this time by link: the same account.
    const again = await requestCode(email);
    const byLink = (await (await verify({ token: again.token })).json()) as Pair;
    expect((await api.me(byLink.access_token)).user_id).toBe(user.user_id);
  });

  it('stores only keyed hashes of the link token and the code', async () => {
    const email = unique('hashes');
    const { token, code } = await requestCode(email);
    const rows = await account.services.store.db.emailCode.findMany({ where: { email } });
    expect(rows).toHaveLength(1);
    const stored = JSON.stringify(rows);
    expect(stored).not.toContain(token);
    expect(stored).not.toContain(code);
  });

  it('answers byte-identically for a known and an unknown address, and sends the same kind of mail', async () => {
    const known = unique('known');
    const { code } = await requestCode(known);
    expect((await verify({ email: known, code })).status).toBe(200);
    const unknown = unique('unknown');
    const answers = await Promise.all([known, unknown].map((email) => api.post('/auth/login/email', { email })));
    const bodies = await Promise.all(answers.map(async (r) => Buffer.from(await r.arrayBuffer())));
    expect(answers.map((r) => r.status)).toEqual([200, 200]);
    expect(bodies[0]!.equals(bodies[1]!)).toBe(true);
    const headerNames = (r: Response) => [...r.headers.keys()].filter((h) => h !== 'date').sort();
    expect(headerNames(answers[0]!)).toEqual(headerNames(answers[1]!));
    expect(answers[0]!.headers.get('content-length')).toBe(answers[1]!.headers.get('content-length'));
    // Both get a mail; the unknown address becomes an account only when its code is used.
    const [a, b] = await Promise.all([sink.next(known), sink.next(unknown)]);
    expect(a.subject).toBe(b.subject);
    expect(await account.services.store.db.user.count({ where: { email: unknown } })).toBe(0);
  });

  it('is described in the OpenAPI document', async () => {
    const doc = (await (await fetch(`${account.url}/api/v1/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
    expect(Object.keys(doc.paths['/auth/login/email'] ?? {})).toContain('post');
    expect(Object.keys(doc.paths['/auth/verify-magic-link'] ?? {})).toContain('post');
  });

  it('answers over tRPC too', async () => {
    const email = unique('trpc');
    const res = await fetch(`${account.url}/trpc/auth.email.request`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ json: { email } }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ result: { data: { json: { message: LOGIN_EMAIL_MESSAGE } } } });
    await sink.next(email);
  });

  it.each([
    [''],
    ['no-at-sign'],
    ['a@b'],
    ['a b@example.com'],
    ['a@exa mple.com'],
    ['<a@example.com>'],
    [`${'x'.repeat(250)}@example.com`],
    ['a@example.com\r\nBcc: b@example.com'],
    [42],
    [null],
  ])('refuses the address %j with 400', async (email) => {
    const res = await api.post('/auth/login/email', { email });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 'VALIDATION_FAILED', detail: expect.any(String) });
    // A garbage address beside a code is a wrong credential, not a malformed request.
    const byCode = await verify({ email, code: '123456' });
    expect(byCode.status).toBe(401);
    expect(await byCode.json()).toEqual(await wrongCodeBody());
  });

  it('refuses a missing address and a non-object body', async () => {
    expect((await api.post('/auth/login/email', {})).status).toBe(400);
    expect((await api.post('/auth/login/email', ['a@example.com'])).status).toBe(400);
  });

  /** What a well-formed but wrong code gets: every garbage credential must get exactly this. */
  const wrongCodeBody = async () => (await verify({ email: unique('never-asked'), code: '000000' })).json();
  const unknownLinkBody = async () => (await verify({ token: randomBytes(32).toString('base64url') })).json();

  it.each([
    ['5 digits', { code: '12345' }],
    ['7 digits', { code: '1234567' }],
    ['letters', { code: 'abcdef' }],
    ['padded', { code: ' 123456' }],
    ['a number', { code: 123456 }],
    ['unicode digits', { code: '１２３４５６' }],
    ['an object', { code: { $gt: '' } }],
    ['null', { code: null }],
  ])('answers a garbage code (%s) with 401, the body of a wrong code', async (_name, fields) => {
    const res = await verify({ email: 'someone@example.com', ...fields });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual(await wrongCodeBody());
  });

  it('answers a code without an address with 401, the body of a wrong code', async () => {
    const res = await verify({ code: '123456' });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual(await wrongCodeBody());
  });

  it.each([
    ['too short', { token: 'abc' }],
    ['bad characters', { token: `${'a'.repeat(40)}!!!` }],
    ['too long', { token: 'a'.repeat(500) }],
    ['empty', { token: '' }],
    ['a number', { token: 42 }],
    ['an array', { token: ['a'.repeat(43)] }],
    ['null', { token: null }],
  ])('answers a garbage link token (%s) with 401, the body of an unknown link', async (_name, body) => {
    const res = await verify(body);
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual(await unknownLinkBody());
  });

  it.each([
    ['token and code', { token: 'a'.repeat(43), email: 'a@example.com', code: '123456' }],
    ['an address but no code', { email: 'a@example.com' }],
    ['nothing', {}],
  ])('refuses a body that names no credential, or both kinds (%s), with 400', async (_name, body) => {
    const res = await verify(body);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 'VALIDATION_FAILED' });
  });

  it('refuses a body that is not JSON with 400', async () => {
    const res = await fetch(`${account.url}/api/v1/auth/verify-magic-link`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"token":',
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 'MALFORMED_JSON' });
  });

  it('refuses unknown codes and links with 401', async () => {
    const code = await verify({ email: unique('never-asked'), code: '000000' });
    expect(code.status).toBe(401);
    expect(await code.json()).toMatchObject({ code: 'INVALID_CODE' });
    const link = await verify({ token: randomBytes(32).toString('base64url') });
    expect(link.status).toBe(401);
    expect(await link.json()).toMatchObject({ code: 'INVALID_LINK' });
  });

  it('refuses expired codes and links (issued 10 minutes and a second ago)', async () => {
    const email = unique('expired');
    const past = new Date(Date.now() - 10 * 60 * 1000 - 1000);
    const issued = await account.services.email.request(email, past);
    await sink.next(email);
    expect((await verify({ email, code: issued.code })).status).toBe(401);
    expect((await verify({ token: issued.token })).status).toBe(401);
    // Still valid just inside the lifetime:
    const fresh = await account.services.email.request(email, new Date(Date.now() - 10 * 60 * 1000 + 5000));
    await sink.next(email);
    expect((await verify({ token: fresh.token })).status).toBe(200);
  });

  it('a code or link works once; the code and link of one mail are one credential', async () => {
    const email = unique('once');
    const first = await requestCode(email);
    expect((await verify({ email, code: first.code })).status).toBe(200);
    const reused = await verify({ email, code: first.code });
    expect(reused.status).toBe(401);
    expect((await verify({ token: first.token })).status).toBe(401);

    const second = await requestCode(email);
    expect((await verify({ token: second.token })).status).toBe(200);
    const replay = await verify({ token: second.token });
    expect(replay.status).toBe(401);
    expect(await replay.json()).toMatchObject({ code: 'INVALID_LINK' });
    expect((await verify({ email, code: second.code })).status).toBe(401);
  });

  it('wrong codes do not kill the code: after 5 of them the right code still works', async () => {
    const email = unique('guess');
    const { code } = await requestCode(email);
    const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, '0');
    for (let i = 0; i < 5; i++) expect((await verify({ email, code: wrong })).status).toBe(401);
    expect((await verify({ email, code })).status).toBe(200);
  });

  it('a codes wrong for one address does not count against another', async () => {
    const a = unique('a');
    const b = unique('b');
    const [sa, sb] = [await requestCode(a), await requestCode(b)];
    // b's right code, sent for a: wrong for a (unless equal by chance), and b's budget is untouched.
    if (sa.code !== sb.code) expect((await verify({ email: a, code: sb.code })).status).toBe(401);
    expect((await verify({ email: b, code: sb.code })).status).toBe(200);
  });

  it('a newer request leaves older codes working: the newest 5 mails of an address work until one signs in, older ones are dropped', async () => {
    const email = unique('newer');
    const mails = [];
    for (let i = 0; i < 7; i++) mails.push(await requestCode(email));
    expect(await account.services.store.db.emailCode.count({ where: { email } })).toBe(5);
    const newest = mails.slice(2).map((m) => m.code);
    for (const dropped of mails.slice(0, 2)) {
      expect((await verify({ token: dropped.token })).status).toBe(401);
      if (!newest.includes(dropped.code)) expect((await verify({ email, code: dropped.code })).status).toBe(401);
    }
    // The newest five are live; the oldest of them signs in, and that spends the other four.
    expect(await account.services.store.db.emailCode.count({ where: { email, usedAt: null } })).toBe(5);
    expect((await verify({ email, code: mails[2]!.code })).status).toBe(200);
    for (const [i, mail] of mails.slice(3).entries()) expect((await verify(i % 2 ? { token: mail.token } : { email, code: mail.code })).status).toBe(401);
  });

  it('10 concurrent verifies of one code give exactly one pair; the same for one link', async () => {
    const email = unique('race');
    const byCode = await requestCode(email);
    const codeAnswers = await Promise.all(Array.from({ length: 10 }, () => verify({ email, code: byCode.code })));
    expect(codeAnswers.map((r) => r.status).filter((s) => s === 200)).toHaveLength(1);
    expect(codeAnswers.map((r) => r.status).filter((s) => s === 401)).toHaveLength(9);

    const byLink = await requestCode(email);
    const linkAnswers = await Promise.all(Array.from({ length: 10 }, () => verify({ token: byLink.token })));
    expect(linkAnswers.map((r) => r.status).filter((s) => s === 200)).toHaveLength(1);
  });

  describe('guest upgrade', () => {
    const guest = async (deviceId: string) => (await (await api.post('/auth/guest', { device_id: testDeviceId(deviceId) })).json()) as Pair;

    it('attaches the address to the guest that asked for the mail, in place: same user id, guest flag cleared', async () => {
      const device = `dev-${randomBytes(4).toString('hex')}`;
      const g = await guest(device);
      const guestUser = await api.me(g.access_token);
      expect(guestUser.guest).toBe(true);
      const email = unique('upgrade');
      const { code } = await requestCode(email, { authorization: `Bearer ${g.access_token}` });
      const res = await verify({ email, code }, { authorization: `Bearer ${g.access_token}` });
      expect(res.status).toBe(200);
      const upgraded = (await res.json()) as Pair;
      expect(await api.me(upgraded.access_token)).toMatchObject({ user_id: guestUser.user_id, guest: false });
      // Signing in by e-mail later reaches the same account; the device id no longer does.
      const later = await requestCode(email);
      const plain = (await (await verify({ token: later.token })).json()) as Pair;
      expect((await api.me(plain.access_token)).user_id).toBe(guestUser.user_id);
      expect((await api.me((await guest(device)).access_token)).user_id).not.toBe(guestUser.user_id);
    });

    it('an address owned by another account answers 409 IDENTITY_IN_USE and merges nothing', async () => {
      const email = unique('owned');
      const first = await requestCode(email);
      const owner = (await (await verify({ email, code: first.code })).json()) as Pair;
      const ownerId = (await api.me(owner.access_token)).user_id;
      const g = await guest(`dev-${randomBytes(4).toString('hex')}`);
      const { code } = await requestCode(email, { authorization: `Bearer ${g.access_token}` });
      const res = await verify({ email, code }, { authorization: `Bearer ${g.access_token}` });
      expect(res.status).toBe(409);
      expect(await res.json()).toMatchObject({ code: 'IDENTITY_IN_USE' });
      expect((await api.me(g.access_token)).guest).toBe(true);
      expect((await api.me(owner.access_token)).user_id).toBe(ownerId);
    });

    it('asking for a mail with a garbage Authorization header is refused with 401, nothing is sent', async () => {
      const res = await api.post('/auth/login/email', { email: unique('garbage-ask') }, { authorization: 'Bearer not-a-token' });
      expect(res.status).toBe(401);
    });

    it('a garbage Authorization header is refused with 401 before the code is spent', async () => {
      const email = unique('garbage-auth');
      const { code } = await requestCode(email);
      const res = await verify({ email, code }, { authorization: 'Bearer not-a-token' });
      expect(res.status).toBe(401);
      expect((await verify({ email, code })).status).toBe(200);
    });
  });
});

describe('e-mail rate limits', () => {
  let account: TestAccount;
  let sink: SmtpSink;
  beforeAll(async () => {
    sink = await startSmtpSink();
    account = await startTestAccount('pglite', { SMTP_URL: sink.url, RATE_LIMIT_MULTIPLIER: '1', TRUST_PROXY: 'loopback' });
  });
  afterAll(async () => {
    await account.stop();
    await sink.close();
  });
  const { post } = { post: (p: string, body: unknown, ip: string) => client(account.url).post(p, body, { 'x-forwarded-for': ip }) };

  it('5 requests a minute per IP', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await post('/auth/login/email', { email: unique(`ip${i}`) }, '198.51.100.1')).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
  });

  it('5 requests a minute per address, whatever the IP', async () => {
    const email = unique('addr');
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await post('/auth/login/email', { email }, `198.51.100.${10 + i}`)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    const limited = await post('/auth/login/email', { email: email.toUpperCase() }, '198.51.100.99');
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await limited.json()).toMatchObject({ code: 'RATE_LIMITED' });
  });

  it('10 verifies a minute per IP', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) statuses.push((await post('/auth/verify-magic-link', { email: 'x@example.com', code: '000000' }, '198.51.100.50')).status);
    expect(statuses.slice(0, 10).every((s) => s === 401)).toBe(true);
    expect(statuses[10]).toBe(429);
  });
});

describe('mail configuration', () => {
  it.each([
    [{ SMTP_URL: 'http://mail.example.com' }, 'SMTP_URL'],
    [{ SMTP_URL: 'not a url' }, 'SMTP_URL'],
    [{ MAIL_FROM: 'nobody' }, 'MAIL_FROM'],
    [{ MAIL_FROM: 'A <a@b.c>\r\nBcc: x@y.z' }, 'MAIL_FROM'],
    [{ DEV_OUTBOX: '1', NODE_ENV: 'production' }, 'DEV_OUTBOX'],
    [{ DEV_OUTBOX: '1', SMTP_URL: 'smtp://127.0.0.1:25' }, 'DEV_OUTBOX'],
    [{ DEV_OUTBOX: 'yes' }, 'DEV_OUTBOX'],
  ])('refuses %o naming %s', (env, name) => {
    expect(() => loadAccountConfig(env)).toThrow(new RegExp(`${name}: `));
  });

  it('accepts smtp:// and smtps:// URLs and a named sender', () => {
    const config = loadAccountConfig({ SMTP_URL: 'smtps://user:pass@mail.example.com:465', MAIL_FROM: 'Accounts <no-reply@example.com>' });
    expect(config).toMatchObject({ smtpUrl: 'smtps://user:pass@mail.example.com:465', mailFrom: 'Accounts <no-reply@example.com>', devOutbox: false });
  });
});

describe('mail delivery', () => {
  /** Starts the service with a logger whose lines the test can read. */
  async function startLogged(env: Record<string, string>) {
    const lines: Array<{ level: number; msg: string; [k: string]: unknown }> = [];
    const log = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const dataDir = await tempDir('account-mail');
    const config = loadAccountConfig({ PORT: String(await freePort()), HOST: '127.0.0.1', DATA_DIR: dataDir, RATE_LIMIT_MULTIPLIER: '1000', ...env });
    const running = await startAccount(config, log);
    return { running, lines, dataDir, api: client(running.url) };
  }
  const waitFor = async (predicate: () => boolean, ms = 10_000) => {
    const until = Date.now() + ms;
    while (!predicate()) {
      if (Date.now() > until) throw new Error('timed out');
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  it('with the mail server down, the answer is the same, the failure is logged and the service carries on', async () => {
    const closedPort = await freePort();
    const { running, lines, api } = await startLogged({ SMTP_URL: `smtp://127.0.0.1:${closedPort}/?ignoreTLS=true` });
    try {
      const res = await api.post('/auth/login/email', { email: 'outage@example.com' });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ message: LOGIN_EMAIL_MESSAGE });
      await waitFor(() => lines.some((l) => /mail delivery failed/.test(l.msg)));
      const failure = lines.find((l) => /mail delivery failed/.test(l.msg))!;
      expect(failure.level).toBeGreaterThanOrEqual(40);
      expect(JSON.stringify(failure)).toMatch(/ECONNREFUSED/);
      expect(JSON.stringify(failure)).not.toContain('outage@example.com');
      // Still serving: another request, and another endpoint.
      expect((await api.post('/auth/login/email', { email: 'outage2@example.com' })).status).toBe(200);
      expect((await api.post('/auth/guest', { device_id: testDeviceId('after-outage') })).status).toBe(200);
    } finally {
      await running.close();
    }
  });

  it('a slow mail server does not slow the answer (the mail goes out after it)', async () => {
    const slow = await startSmtpSink({ delayMs: 2000 });
    const { running, api } = await startLogged({ SMTP_URL: slow.url, LOG_LEVEL: 'silent' });
    try {
      const started = performance.now();
      const res = await api.post('/auth/login/email', { email: 'slow@example.com' });
      expect(res.status).toBe(200);
      expect(performance.now() - started).toBeLessThan(1500);
      const mail = await slow.next('slow@example.com');
      expect(signInSecrets(mail).code).toMatch(/^\d{6}$/);
      // Without DEV_OUTBOX=1 there is no outbox page.
      expect((await fetch(`${running.url}/dev/outbox`)).status).toBe(404);
    } finally {
      await running.close();
      await slow.close();
    }
  });

  it('without SMTP_URL, mail goes to DATA_DIR/outbox as .eml; DEV_OUTBOX=1 lists it at /dev/outbox', async () => {
    const { running, lines, dataDir, api } = await startLogged({ DEV_OUTBOX: '1', FRONTEND_URL: 'http://app.test' });
    try {
      expect((await api.post('/auth/login/email', { email: 'local@example.com' })).status).toBe(200);
      await running.services.mail.idle();
      const outbox = path.join(dataDir, 'outbox');
      const files = await readdir(outbox);
      const eml = files.find((f) => f.endsWith('.eml'))!;
      const parsed = await simpleParser(await readFile(path.join(outbox, eml)));
      expect(parsed.to).toMatchObject({ value: [{ address: 'local@example.com' }] });
      expect(signInSecrets(parsed).link).toMatch(/^http:\/\/app\.test\/auth\/verify\?token=/);
      expect(lines.some((l) => l.msg.includes('outbox') && String(l.file).endsWith('.eml'))).toBe(true);
      const page = await fetch(`${running.url}/dev/outbox`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('local@example.com');
      const list = (await (await fetch(`${running.url}/dev/outbox.json`)).json()) as { messages: Array<{ to: string; text: string }> };
      const code = /\b(\d{6})\b/.exec(list.messages[0]!.text)![1];
      expect((await api.post('/auth/verify-magic-link', { email: 'local@example.com', code })).status).toBe(200);
    } finally {
      await running.close();
    }
  });
});
