/**
 * GET /metrics on both services: Prometheus text, requests counted by route template with the
 * right amounts, no label ever carrying an id, a token or a raw path a caller sent, and only the
 * callers the design allows (METRICS_TOKEN, or loopback with no proxy in between).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestAccount, startTestAgent, type TestAccount, type TestAgent } from '../support/servers.js';

const SECRETISH = 'zz9plural-z-alpha';
let account: TestAccount;
let agent: TestAgent;
let guarded: TestAccount;

beforeAll(async () => {
  [account, agent, guarded] = await Promise.all([
    startTestAccount('pglite'),
    startTestAgent(),
    startTestAccount('pglite', { METRICS_TOKEN: 'metrics-token-0123456789' }),
  ]);
});
afterAll(async () => {
  await Promise.all([account?.stop(), agent?.stop(), guarded?.stop()]);
});

const scrape = async (url: string, headers: Record<string, string> = {}) => {
  const res = await fetch(`${url}/metrics`, { headers });
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
};

/** The count of one series of the request histogram, 0 when absent. */
function requestCount(text: string, labels: { method: string; route: string; status: string }): number {
  const line = text
    .split('\n')
    .find(
      (l) =>
        l.startsWith('http_request_duration_seconds_count{') &&
        l.includes(`method="${labels.method}"`) &&
        l.includes(`route="${labels.route}"`) &&
        l.includes(`status="${labels.status}"`),
    );
  return line ? Number(line.split(' ').at(-1)) : 0;
}

describe('account service', () => {
  it('counts requests by route template, by the right amounts', async () => {
    const before = await scrape(account.url);
    expect(before.status).toBe(200);
    expect(before.type).toContain('text/plain');
    expect(before.text).toContain('process_resident_memory_bytes');
    const series = { method: 'POST', route: '/auth/guest', status: '2xx' };
    const start = requestCount(before.text, series);
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${account.url}/api/v1/auth/guest`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ device_id: `metrics-device-${i}-0123456789abcdef` }),
      });
      expect(res.status).toBe(200);
    }
    await fetch(`${account.url}/api/v1/auth/me`);
    const after = await scrape(account.url);
    expect(requestCount(after.text, series)).toBe(start + 3);
    expect(requestCount(after.text, { method: 'GET', route: '/auth/me', status: '4xx' })).toBeGreaterThanOrEqual(1);
  });

  it('counts sign-ins by method and result, refreshes by result and rate-limit refusals by limit', async () => {
    const strict = await startTestAccount('pglite', { RATE_LIMIT_MULTIPLIER: '1' });
    try {
      const value = (text: string, name: string, labels: Record<string, string>) => {
        const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)));
        return line ? Number(line.split(' ').at(-1)) : 0;
      };
      const post = (path: string, body: unknown) =>
        fetch(`${strict.url}/api/v1${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const pair = (await (await post('/auth/guest', { device_id: 'metrics-counted-device-0123456789' })).json()) as { refresh_token: string };
      expect((await post('/auth/refresh', { refresh_token: pair.refresh_token })).status).toBe(200);
      await post('/auth/refresh', { refresh_token: 'not.a.token' });
      await post('/auth/verify-magic-link', { code: '000000', email: 'nobody@example.com' });
      for (let i = 0; i < 11; i++) await post('/auth/wallet/challenge', { address: '0x0000000000000000000000000000000000000001' });
      const text = (await scrape(strict.url)).text;
      expect(value(text, 'sign_ins_total', { method: 'guest', result: 'ok' })).toBe(1);
      expect(value(text, 'token_refreshes_total', { result: 'rotated' })).toBe(1);
      expect(value(text, 'token_refreshes_total', { result: 'invalid' })).toBe(1);
      expect(value(text, 'sign_ins_total', { method: 'email' })).toBe(1);
      expect(value(text, 'rate_limit_refusals_total', { limit: 'auth.wallet.challenge' })).toBe(1);
    } finally {
      await strict.stop();
    }
  });

  it('never turns what a caller sent into a label', async () => {
    const token = `Bearer ${SECRETISH}`;
    await fetch(`${account.url}/api/v1/agent/chat/${SECRETISH}/history`, { headers: { authorization: token } });
    await fetch(`${account.url}/api/v1/${SECRETISH}`);
    await fetch(`${account.url}/trpc/${SECRETISH}.query`);
    await fetch(`${account.url}/api/v1/auth/guest`, { method: SECRETISH.toUpperCase().replace(/[^A-Z]/g, '') });
    await fetch(`${account.url}/${SECRETISH}?token=${SECRETISH}`);
    const { text } = await scrape(account.url);
    expect(text).not.toContain(SECRETISH);
    expect(text).not.toMatch(/ZZPLURALZALPHA/);
    expect(text).toContain('route="/trpc/*"');
    expect(text).toContain('route="/agent/*"');
  });

  it('is served to loopback callers only, never through a proxy, unless METRICS_TOKEN is set', async () => {
    expect((await scrape(account.url, { 'x-forwarded-for': '203.0.113.9' })).status).toBe(403);
    expect((await scrape(account.url, { forwarded: 'for=203.0.113.9' })).status).toBe(403);
    const refused = await scrape(guarded.url);
    expect(refused.status).toBe(401);
    expect(JSON.parse(refused.text)).toMatchObject({ code: 'UNAUTHORIZED' });
    expect((await scrape(guarded.url, { authorization: 'Bearer metrics-token-0123456789x' })).status).toBe(401);
    expect((await scrape(guarded.url, { authorization: 'Bearer metrics-token-0123456789', 'x-forwarded-for': '203.0.113.9' })).status).toBe(200);
  });
});

describe('agent', () => {
  it('serves its metrics without the agent secret to loopback callers, by route template', async () => {
    await fetch(`${agent.url}/chat/${SECRETISH}/history`, { headers: agent.auth });
    const { status, text } = await scrape(agent.url);
    expect(status).toBe(200);
    expect(text).toContain('service="agent"');
    expect(requestCount(text, { method: 'GET', route: '/chat/{chat_id}/history', status: '2xx' })).toBe(1);
    expect(text).not.toContain(SECRETISH);
  });
});
