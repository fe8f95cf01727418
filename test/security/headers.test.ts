/**
 * Security headers of both services and of the web client: no x-powered-by, nosniff,
 * no-referrer, frame denial, a strict CSP on the web client's pages, and CORS for the
 * configured FRONTEND_URL origin only.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpApp, finishHttpApp, listen, type RunningServer } from '../../server/common/http.js';
import { createLogger } from '../../server/common/log.js';
import { serveWebClient, webCsp } from '../../server/account/web.js';
import { startTestAccount, startTestAgent, tempDir, type TestAccount, type TestAgent } from '../support/servers.js';
import { testDeviceId } from '../support/devices.js';

const FRONTEND = 'http://127.0.0.1:5999';

function expectBaseHeaders(res: Response) {
  expect(res.headers.get('x-powered-by')).toBeNull();
  expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  expect(res.headers.get('referrer-policy')).toBe('no-referrer');
  expect(res.headers.get('x-frame-options')).toBe('DENY');
  expect(res.headers.get('x-request-id')).toMatch(/^[\w.:-]+$/);
}

describe('security headers', () => {
  let account: TestAccount;
  let split: TestAccount;
  let agent: TestAgent;
  let web: RunningServer;

  beforeAll(async () => {
    [account, split, agent] = await Promise.all([
      startTestAccount('pglite'),
      startTestAccount('pglite', { FRONTEND_URL: `${FRONTEND}/app` }),
      startTestAgent(),
    ]);
    // The web client as the account service serves it (the same function), over a tiny build.
    const dist = await tempDir('web-dist');
    await mkdir(path.join(dist, 'assets'));
    await writeFile(path.join(dist, 'index.html'), '<!doctype html><script src="/assets/a.js"></script>');
    await writeFile(path.join(dist, 'assets/a.js'), 'console.log(1)');
    const app = createHttpApp(createLogger('web', 'silent'));
    serveWebClient(app, dist);
    finishHttpApp(app);
    web = await listen(app, '127.0.0.1', 0);
  });
  afterAll(async () => {
    await Promise.all([account?.stop(), split?.stop(), agent?.stop(), web?.close()]);
  });

  it('account API answers (success, error, 404) carry the base headers and no CSP-less HTML', async () => {
    for (const [url, init] of [
      [`${account.url}/.well-known/jwks.json`, {}],
      [`${account.url}/api/v1/auth/me`, {}],
      [`${account.url}/api/v1/nope`, {}],
      [
        `${account.url}/api/v1/auth/guest`,
        { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ device_id: testDeviceId('h') }) },
      ],
      [`${account.url}/trpc/tokens.me`, {}],
    ] as const) {
      const res = await fetch(url, init);
      expectBaseHeaders(res);
      expect(res.headers.get('content-type') ?? '').toMatch(/application\/json/);
    }
  });

  it('agent API answers carry the base headers', async () => {
    for (const [p, auth] of [
      ['/health', false],
      ['/workspace/tree', true],
      ['/workspace/tree', false],
      ['/nope', true],
    ] as const) {
      const res = await fetch(`${agent.url}${p}`, { headers: auth ? agent.auth : {} });
      expectBaseHeaders(res);
    }
  });

  it('web client pages have a strict CSP (no inline script, no framing) and the base headers', async () => {
    for (const p of ['/', '/auth/callback', '/assets/a.js']) {
      const res = await fetch(`${web.url}${p}`, { headers: { accept: 'text/html' } });
      expect(res.status).toBe(200);
      expectBaseHeaders(res);
      const csp = res.headers.get('content-security-policy') ?? '';
      expect(csp).toContain("default-src 'self'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toContain('unsafe-inline');
      expect(csp).not.toContain('unsafe-eval');
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).toContain("base-uri 'none'");
      expect(csp).not.toMatch(/frame-src|https:/); // no CAPTCHA: nothing from elsewhere
    }
  });

  it('with a CAPTCHA on, the CSP lets in its provider (script and frame) and nothing else', () => {
    const turnstile = webCsp('turnstile');
    expect(turnstile).toContain("script-src 'self' https://challenges.cloudflare.com;");
    expect(turnstile).toContain('frame-src https://challenges.cloudflare.com;');
    expect(turnstile).toContain("connect-src 'self';");
    const hcaptcha = webCsp('hcaptcha');
    expect(hcaptcha).toContain("script-src 'self' https://hcaptcha.com https://*.hcaptcha.com;");
    expect(hcaptcha).toContain('frame-src https://hcaptcha.com https://*.hcaptcha.com;');
    for (const csp of [turnstile, hcaptcha]) {
      expect(csp).not.toMatch(/unsafe-inline|unsafe-eval/);
      expect(csp).toContain("frame-ancestors 'none'");
    }
  });

  it('no CORS at all when the web client is on the API origin (the default)', async () => {
    const res = await fetch(`${account.url}/api/v1/auth/me`, { headers: { origin: 'https://evil.example' } });
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    const pre = await fetch(`${account.url}/api/v1/auth/guest`, {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(pre.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('CORS allows exactly FRONTEND_URL’s origin when it differs from BASE_URL', async () => {
    const ok = await fetch(`${split.url}/api/v1/auth/me`, { headers: { origin: FRONTEND } });
    expect(ok.headers.get('access-control-allow-origin')).toBe(FRONTEND);
    expect(ok.headers.get('access-control-allow-credentials')).toBeNull();
    expect(ok.headers.get('vary') ?? '').toMatch(/origin/i);

    const pre = await fetch(`${split.url}/api/v1/auth/guest`, {
      method: 'OPTIONS',
      headers: { origin: FRONTEND, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, authorization' },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe(FRONTEND);
    expect((pre.headers.get('access-control-allow-headers') ?? '').toLowerCase()).toContain('authorization');

    for (const origin of ['https://evil.example', 'http://127.0.0.1:5998', `${FRONTEND}.evil.example`, 'null', split.url]) {
      const res = await fetch(`${split.url}/api/v1/auth/me`, { headers: { origin } });
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
      const p = await fetch(`${split.url}/api/v1/auth/guest`, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST' } });
      expect(p.headers.get('access-control-allow-origin')).toBeNull();
      expect(p.headers.get('access-control-allow-methods')).toBeNull();
    }
  });

  it('the agent sends no CORS headers (it is called by the account proxy, not by browsers)', async () => {
    const res = await fetch(`${agent.url}/health`, { headers: { origin: 'https://evil.example' } });
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });
});
