import { expect, test } from './support/test.js';

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
