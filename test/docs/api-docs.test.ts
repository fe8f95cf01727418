/**
 * The served API reference (rest-bridge/api-docs.ts) on both services, over real HTTP: the page,
 * its three local assets, its CSP, and nothing else reachable under /docs/. The browser half
 * (the operations render, no request leaves loopback) is e2e/api-docs.spec.ts.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestAccount, startTestAgent, type TestAccount, type TestAgent } from '../support/servers.js';

const swaggerDir = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

let account: TestAccount;
let agent: TestAgent;
beforeAll(async () => {
  [account, agent] = await Promise.all([startTestAccount(), startTestAgent()]);
});
afterAll(() => Promise.all([account?.stop(), agent?.stop()]));

/** Where each service serves its page, and the URL its document is at. */
const services = () => [
  { name: 'account', page: `${account.url}/api/v1/docs`, title: 'Account API reference' },
  { name: 'agent', page: `${agent.url}/docs`, title: 'Agent API reference' },
];

/** The `src`/`href` of every script and stylesheet of the page. */
const assetsOf = (html: string) => [...html.matchAll(/<(?:script|link)\b[^>]*\b(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);

describe.each(['account', 'agent'])('the API reference of the %s service', (name) => {
  const service = () => services().find((s) => s.name === name)!;

  it('is an HTML page under a CSP that allows this origin only and no inline script', async () => {
    const res = await fetch(service().page);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = res.headers.get('content-security-policy') ?? '';
    const directives = Object.fromEntries(csp.split(/;\s*/).map((d) => [d.split(' ')[0], d.split(' ').slice(1).join(' ')]));
    expect(directives).toMatchObject({
      'default-src': "'none'",
      'script-src': "'self'",
      'style-src': "'self'",
      'connect-src': "'self'",
      'frame-ancestors': "'none'",
    });
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:|\*/);
    const html = await res.text();
    expect(html).toContain(`<title>${service().title}</title>`);
    // Its document is the service's own, beside it; no script in the page itself.
    expect(html).toContain('data-spec="openapi.json"');
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(assetsOf(html).every((url) => url.startsWith('docs/'))).toBe(true);
  });

  it('serves every asset the page names, from the installed swagger-ui-dist', async () => {
    const html = await (await fetch(service().page)).text();
    const assets = assetsOf(html);
    expect(assets.sort()).toEqual(['docs/start.js', 'docs/swagger-ui-bundle.js', 'docs/swagger-ui.css']);
    for (const asset of assets) {
      const res = await fetch(new URL(asset, service().page));
      expect(res.status, asset).toBe(200);
      expect(res.headers.get('content-type'), asset).toMatch(asset.endsWith('.css') ? /^text\/css/ : /^(text|application)\/javascript/);
      const body = await res.text();
      if (asset.includes('swagger')) expect(body).toBe(readFileSync(path.join(swaggerDir, path.basename(asset)), 'utf8'));
      // The start-up turns Swagger UI's validator off: it would send the document to validator.swagger.io.
      else expect(body).toContain('validatorUrl: null');
    }
  });

  it.each(['package.json', 'index.html', 'swagger-initializer.js', '..%2Fpackage.json', '..%2F..%2Fpackage.json', 'api-docs.ts', 'api-docs.browser.js'])(
    'serves nothing else under docs/ (%s)',
    async (asset) => {
      const res = await fetch(`${service().page}/${asset}`);
      expect(res.status).toBe(404);
      expect(((await res.json()) as { code: string }).code).toMatch(/NOT_FOUND/);
    },
  );

  it('sends docs/ back to docs, where its relative URLs resolve', async () => {
    const res = await fetch(`${service().page}/`, { redirect: 'manual' });
    expect(res.status).toBe(301);
    expect(new URL(res.headers.get('location')!, `${service().page}/`).href).toBe(service().page);
  });
});

it('the account serves its document to the page unauthenticated; the agent asks for its secret', async () => {
  const accountDoc = await fetch(new URL('openapi.json', `${account.url}/api/v1/docs`));
  expect(accountDoc.status).toBe(200);
  expect(Object.keys(((await accountDoc.json()) as { paths: object }).paths)).toContain('/auth/refresh');
  const agentDoc = new URL('openapi.json', `${agent.url}/docs`);
  expect((await fetch(agentDoc)).status).toBe(401);
  expect((await fetch(agentDoc, { headers: agent.auth })).status).toBe(200);
});
