import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestAccount, type TestAccount } from '../support/servers.js';
import { redisReachable } from '../support/redis.js';
import { testDeviceId } from '../support/devices.js';

const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

describe('rate limits (memory store)', () => {
  let account: TestAccount;
  beforeAll(async () => {
    account = await startTestAccount('pglite', { RATE_LIMIT_MULTIPLIER: '1', TRUST_PROXY: 'loopback' });
  });
  afterAll(() => account.stop());

  it('allows exactly 10 guest sign-ins a minute per IP, then 429 with Retry-After and RateLimit-*', async () => {
    const from = { 'x-forwarded-for': '203.0.113.7' };
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) statuses.push((await post(`${account.url}/api/v1/auth/guest`, { device_id: testDeviceId(`rl-${i}`) }, from)).status);
    expect(statuses.slice(0, 10).every((s) => s === 200)).toBe(true);
    const limited = await post(`${account.url}/api/v1/auth/guest`, { device_id: testDeviceId('rl-x') }, from);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(limited.headers.get('ratelimit-limit')).toBe('10');
    expect(limited.headers.get('ratelimit-remaining')).toBe('0');
    expect(await limited.json()).toMatchObject({ code: 'RATE_LIMITED', detail: expect.any(String) });
    // Another client is not affected.
    expect((await post(`${account.url}/api/v1/auth/guest`, { device_id: testDeviceId('rl-y') }, { 'x-forwarded-for': '203.0.113.8' })).status).toBe(200);
  });

  it("limits a connector sign-in's browser steps to 30 a minute per IP, both steps in one count, and says so on the Connectors page", async () => {
    const from = { 'x-forwarded-for': '203.0.113.10' };
    const step = (path: string, headers = from) => fetch(`${account.url}/api/v1${path}`, { redirect: 'manual', headers });
    const reasonOf = (answer: Response) => new URL(answer.headers.get('location') ?? '', account.url).searchParams.get('error') ?? '';
    const reasons: string[] = [];
    for (let i = 0; i < 15; i++) {
      // Unknown tickets and states: each one a store look-up, which is what the limit bounds.
      const opened = await step(`/connectors/${randomUUID()}/authorize?ticket=t${i}`);
      expect(opened.headers.get('ratelimit-remaining')).toBe(String(29 - 2 * i));
      reasons.push(reasonOf(opened));
      reasons.push(reasonOf(await step(`/connectors/callback?state=s${i}&code=c`)));
    }
    expect(reasons.every((reason) => /unknown/.test(reason))).toBe(true);
    for (const path of [`/connectors/${randomUUID()}/authorize?ticket=t`, '/connectors/callback?state=s&code=c']) {
      const refused = await step(path);
      expect(refused.status).toBe(302);
      expect(new URL(refused.headers.get('location') ?? '').pathname).toBe('/connectors');
      expect(reasonOf(refused)).toMatch(/^Too many requests; try again in \d+ s$/);
    }
    // Another client is not affected.
    expect(reasonOf(await step('/connectors/callback?state=s&code=c', { 'x-forwarded-for': '203.0.113.11' }))).toMatch(/unknown/);
  });

  it('counts over tRPC the same way', async () => {
    const from = { 'x-forwarded-for': '203.0.113.9' };
    const call = () => post(`${account.url}/trpc/tokens.refresh`, { json: { refresh_token: 'x' } }, from);
    const statuses: number[] = [];
    for (let i = 0; i < 21; i++) statuses.push((await call()).status);
    expect(statuses.slice(0, 20).every((s) => s === 401)).toBe(true);
    expect(statuses[20]).toBe(429);
    // The refusal carries Retry-After over tRPC too (the web client counts down with it).
    const limited = await call();
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});

describe.runIf(await redisReachable())('rate limits shared through Redis by two instances', () => {
  let a: TestAccount;
  let b: TestAccount;
  beforeAll(async () => {
    const env = { RATE_LIMIT_MULTIPLIER: '1', TRUST_PROXY: 'loopback', REDIS_URL: 'redis://127.0.0.1:6379' };
    a = await startTestAccount('pglite', env);
    b = await startTestAccount('pglite', env);
  });
  afterAll(async () => {
    await a.stop();
    await b.stop();
  });

  it('20 refreshes a minute per IP in total across both instances', async () => {
    // Redis outlives the test run: a fresh /64 (clients are counted per /64) keeps earlier runs' counters out of this one.
    const from = { 'x-forwarded-for': `2001:db8:${randomBytes(2).toString('hex')}:${randomBytes(2).toString('hex')}::1` };
    const statuses: number[] = [];
    for (let i = 0; i < 22; i++) {
      const target = i % 2 === 0 ? a : b;
      statuses.push((await post(`${target.url}/api/v1/auth/refresh`, { refresh_token: 'x' }, from)).status);
    }
    expect(statuses.filter((s) => s === 429)).toHaveLength(2);
  });
});
