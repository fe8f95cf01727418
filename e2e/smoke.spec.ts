import { expect, test } from './support/test.js';
import { signInAsGuest } from './support/guest.js';

// The product as `npm start` runs it answers in a real browser.
test('the API describes itself, and a user reaches their own agent through it', async ({ page }) => {
  await page.goto('/api/v1');
  await expect(page).toHaveURL(/\/api\/v1\/openapi\.json$/);
  const doc = JSON.parse(((await page.locator('body').textContent()) ?? '').trim()) as { info: { title: string } };
  expect(doc.info.title).toBe('Account API');

  const pair = (await (await page.request.post('/api/v1/auth/guest', { data: { device_id: 'smoke-device.test-device-id' } })).json()) as {
    access_token: string;
  };
  const health = await page.request.get('/api/v1/agent/health', { headers: { authorization: `Bearer ${pair.access_token}` } });
  expect(await health.json()).toMatchObject({ status: 'ok' });
});

test('a guest signs in and out in the web client', async ({ page }) => {
  await page.goto('/');
  // The first visit says what the product is.
  await expect(page.getByTestId('tagline')).toContainText('Your own AI agent');
  await page.getByRole('button', { name: 'Continue as guest' }).click();
  await expect(page.getByTestId('signed-in')).toContainText('as a guest');
  // A guest sees how much of the day is left.
  await expect(page.getByTestId('signed-in')).toContainText(/\d+ of \d+ messages left today/);
  await page.screenshot({ path: 'test-results/screenshots/home-guest.png' });
  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page.getByRole('heading', { name: 'Sign in' })).toBeVisible();
});

test('a call still on its way at sign-out leaves the sign-in page alone: what the user types there stays', async ({ page }) => {
  await signInAsGuest(page, `smoke-late-call-${Date.now().toString(36)}`);
  // The Account page's activity list is held on its way until the session has ended.
  let release = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const asked = page.waitForRequest((request) => new URL(request.url()).pathname === '/trpc/account.activity');
  await page.route(
    (url) => url.pathname === '/trpc/account.activity',
    async (route) => {
      await held;
      await route.continue();
    },
  );
  await page.goto('/account');
  await asked;
  const loggedOut = page.waitForResponse((response) => new URL(response.url()).pathname === '/trpc/tokens.logout');
  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page.getByRole('heading', { name: 'Sign in' })).toBeVisible();
  expect((await loggedOut).status()).toBe(200);
  const address = page.getByRole('region', { name: 'E-mail' }).getByLabel('E-mail address');
  await address.fill('someone@example.com');
  const refused = page.waitForResponse((response) => new URL(response.url()).pathname === '/trpc/account.activity');
  release();
  expect((await refused).status()).toBe(401);
  // Its refusal is not taken for a session lost now: no second drawing, no "session has ended".
  await page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 200)));
  await expect(address).toHaveValue('someone@example.com');
  await expect(page.getByText('Your session has ended')).toHaveCount(0);
});
