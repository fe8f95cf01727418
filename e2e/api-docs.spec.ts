import { expect, test } from '@playwright/test';

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

// The served API reference renders the account's operations in a real browser, from files of
// this origin only: every request the page makes is recorded and none may leave loopback, and
// the page's CSP must not have had to refuse anything it needs.
test('the API reference renders from local files, with no request leaving loopback', async ({ page }) => {
  const requests: string[] = [];
  const refused: string[] = [];
  page.on('request', (request) => requests.push(request.url()));
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) refused.push(message.text());
  });
  page.on('pageerror', (error) => refused.push(`page error: ${error.message}`));

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

  const paths = requests.map((url) => new URL(url));
  expect(paths.map((url) => url.pathname)).toEqual(
    expect.arrayContaining([
      '/api/v1/docs',
      '/api/v1/docs/swagger-ui-bundle.js',
      '/api/v1/docs/swagger-ui.css',
      '/api/v1/docs/start.js',
      '/api/v1/openapi.json',
    ]),
  );
  expect(paths.filter((url) => url.protocol !== 'data:' && !LOOPBACK.has(url.hostname)).map(String)).toEqual([]);
  expect(refused).toEqual([]);
});

test('the web client links to the API reference', async ({ page }) => {
  await page.goto('/');
  await page.getByRole('button', { name: 'Continue as guest' }).click();
  await expect(page.getByTestId('signed-in')).toContainText('as a guest');
  await page.getByRole('link', { name: 'API reference' }).click();
  await expect(page).toHaveURL(/\/api\/v1\/docs$/);
  await expect(page.getByRole('heading', { level: 1, name: /Account API/ })).toBeVisible({ timeout: 20_000 });
});
