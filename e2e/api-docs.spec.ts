import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Page } from '@playwright/test';
import { expect, test } from './support/test.js';

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** Records every request the page makes, and every CSP refusal or script error it reports. */
function watch(page: Page): { requests: URL[]; refused: string[] } {
  const seen = { requests: [] as URL[], refused: [] as string[] };
  page.on('request', (request) => seen.requests.push(new URL(request.url())));
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) seen.refused.push(message.text());
  });
  page.on('pageerror', (error) => seen.refused.push(`page error: ${error.message}`));
  return seen;
}

const offLoopback = (requests: URL[]) => requests.filter((url) => url.protocol !== 'data:' && !LOOPBACK.has(url.hostname)).map(String);

// The served API reference renders the account's operations in a real browser, from files of
// this origin only: every request the page makes is recorded and none may leave loopback, and
// the page's CSP must not have had to refuse anything it needs.
test('the API reference renders from local files, with no request leaving loopback', async ({ page }) => {
  const { requests, refused } = watch(page);

  await page.goto('/api/v1/docs');
  // 1.7 MB of Swagger UI to parse on a loaded machine: more than the default 5 s.
  await expect(page.getByRole('heading', { level: 1, name: /Account API/ })).toBeVisible({ timeout: 20_000 });
  // An operation of the document, rendered: its path and its summary.
  const refresh = page.locator('.opblock', { has: page.locator('[data-path="/auth/refresh"]') });
  await expect(refresh.first()).toBeVisible();
  await refresh.first().locator('.opblock-summary').click();
  await expect(refresh.first().locator('.opblock-body')).toBeVisible();
  // The account's document is public: the bearer-token form stays hidden.
  await expect(page.locator('#token-form')).toBeHidden();

  expect(requests.map((url) => url.pathname)).toEqual(
    expect.arrayContaining([
      '/api/v1/docs',
      '/api/v1/docs/swagger-ui-bundle.js',
      '/api/v1/docs/swagger-ui.css',
      '/api/v1/docs/start.js',
      '/api/v1/openapi.json',
    ]),
  );
  expect(offLoopback(requests)).toEqual([]);
  expect(refused).toEqual([]);
});

test('the web client links to the API reference', async ({ page }) => {
  await page.goto('/');
  await page.getByRole('button', { name: 'Continue as guest' }).click();
  await expect(page.getByTestId('signed-in')).toContainText('as a guest');
  // The footer with the link is on every page but the chat, which keeps the whole window for the conversation.
  await page.getByRole('link', { name: 'Account' }).click();
  await page.getByRole('link', { name: 'API reference' }).click();
  await expect(page).toHaveURL(/\/api\/v1\/docs$/);
  await expect(page.getByRole('heading', { level: 1, name: /Account API/ })).toBeVisible({ timeout: 20_000 });
});

// An agent's document needs its secret: the page asks for it, then renders the agent's operations.
test("an agent's API reference asks for its secret, then renders", async ({ page }) => {
  // The first port after those of playwright.config.ts's servers (+10 to +14).
  const port = Number(process.env.E2E_PORT_BASE ?? 3900) + 15;
  const secret = randomBytes(24).toString('hex');
  const workspace = await mkdtemp(path.join(tmpdir(), 'e2e-docs-agent-'));
  const agent: ChildProcess = spawn(process.execPath, ['dist/agent/boot.cjs'], {
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      AGENT_PORT: String(port),
      AGENT_SECRET: secret,
      AGENT_WORKSPACE: workspace,
      HEARTBEAT_INTERVAL: '0',
      LOG_LEVEL: 'warn',
    },
    stdio: 'inherit',
  });
  try {
    const url = `http://127.0.0.1:${port}`;
    await expect
      .poll(
        () =>
          fetch(`${url}/health`).then(
            (r) => r.status,
            () => 0,
          ),
        { timeout: 30_000 },
      )
      .toBe(200);
    const { requests, refused } = watch(page);

    await page.goto(`${url}/docs`);
    const form = page.locator('#token-form');
    await expect(form).toBeVisible({ timeout: 20_000 });
    await form.getByLabel('Bearer token').fill('not-the-secret-at-all');
    const refusedDocument = page.waitForResponse((r) => r.url() === `${url}/openapi.json` && r.status() === 401);
    await form.getByRole('button', { name: 'Load' }).click();
    await refusedDocument;
    await expect(page.getByRole('heading', { level: 1, name: /Agent API/ })).toBeHidden();
    await expect(form).toBeVisible();

    await form.getByLabel('Bearer token').fill(secret);
    await form.getByRole('button', { name: 'Load' }).click();
    await expect(page.getByRole('heading', { level: 1, name: /Agent API/ })).toBeVisible({ timeout: 20_000 });
    await expect(page.locator('[data-path="/chat/{chat_id}/history"]').first()).toBeVisible();
    await expect(form).toBeHidden();
    expect(offLoopback(requests)).toEqual([]);
    expect(refused).toEqual([]);
  } finally {
    agent.kill('SIGTERM');
    await new Promise((resolve) => agent.once('exit', resolve));
    await rm(workspace, { recursive: true, force: true });
  }
});
