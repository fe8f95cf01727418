/**
 * The CAPTCHA in the web client, with a product of its own that has it on (Turnstile), a local
 * siteverify server with the provider's contract, and the provider's widget script answered by
 * Playwright with a stand-in that implements its explicit-render API: the page loads the widget
 * only because the service says so, sends the solved token in `x-captcha-response`, and the
 * service checks it before a guest exists. That product has provider A configured and provider B
 * not, so its sign-in page also shows that only configured providers are offered.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect, test } from './support/test.js';
import { startTestAccount, type TestAccount } from '../test/support/servers.js';

const SOLVED = 'solved-token-0123456789';
let account: TestAccount;
let siteverify: Server;
const checked: string[] = [];

test.beforeAll(async () => {
  siteverify = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const response = new URLSearchParams(body).get('response') ?? '';
      checked.push(response);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ success: response === SOLVED }));
    });
  });
  await new Promise<void>((resolve) => siteverify.listen(0, '127.0.0.1', () => resolve()));
  const { port } = siteverify.address() as AddressInfo;
  account = await startTestAccount('pglite', {
    AGENT_PROVISIONER: 'static',
    CAPTCHA_PROVIDER: 'turnstile',
    CAPTCHA_SECRET: 'captcha-secret-0123456789',
    CAPTCHA_SITE_KEY: 'site-key-0123456789',
    CAPTCHA_VERIFY_URL: `http://127.0.0.1:${port}/siteverify`,
    // Provider A as the e2e stack has it (playwright.config.ts); provider B left unconfigured.
    IDPA_ISSUER: `http://127.0.0.1:${Number(process.env.E2E_PORT_BASE ?? 3900) + 10}`,
    IDPA_CLIENT_ID: 'web-client',
    IDPA_CLIENT_SECRET: 'web-secret-0123456789',
  });
});
test.afterAll(async () => {
  await account?.stop();
  await new Promise<void>((resolve) => siteverify?.close(() => resolve()));
});

test('the page renders the widget the service asks for and a solved challenge signs the guest in', async ({ page }) => {
  let loaded = 0;
  await page.route('https://challenges.cloudflare.com/turnstile/v0/api.js*', (route) => {
    loaded += 1;
    return route.fulfill({
      contentType: 'text/javascript',
      body: `window.turnstile = {
        render(el, options) {
          const button = document.createElement('button');
          button.type = 'button';
          button.textContent = 'I am human (' + options.sitekey + ')';
          button.onclick = () => options.callback(${JSON.stringify(SOLVED)});
          el.append(button);
          return 'widget-1';
        },
        reset() {},
      };`,
    });
  });
  await page.goto(`${account.url}/`);
  const guestForm = page.getByRole('region', { name: 'New here?' });
  // Unsolved: the page asks for the check and sends nothing.
  await guestForm.getByRole('button', { name: 'Continue as guest' }).click();
  await expect(guestForm.getByRole('alert')).toContainText('Complete the check');
  expect(checked).toEqual([]);
  expect(loaded).toBeGreaterThan(0);
  await guestForm.getByRole('button', { name: 'I am human (site-key-0123456789)' }).click();
  await guestForm.getByRole('button', { name: 'Continue as guest' }).click();
  await expect(page.getByTestId('signed-in')).toContainText('as a guest');
  expect(checked).toContain(SOLVED);
});

test('the sign-in page offers the configured provider and not the unconfigured one', async ({ page }) => {
  // The widget's script is not this test's business (and the network is not there).
  await page.route('https://challenges.cloudflare.com/**', (route) => route.abort());
  const methods = page.waitForResponse((res) => res.url().includes('auth.methods.list'));
  await page.goto(`${account.url}/`);
  // The buttons are settled once the page knows the methods.
  expect((await methods).ok()).toBe(true);
  await expect(page.getByRole('button', { name: 'Sign in with provider A' })).toBeVisible();
  await expect(page.getByRole('region', { name: 'E-mail' })).toBeVisible();
  await expect(page.getByRole('button', { name: /provider B/ })).toHaveCount(0);
});
