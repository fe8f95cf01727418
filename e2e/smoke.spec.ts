import { expect, test } from '@playwright/test';

// The product as `npm start` runs it answers in a real browser.
test('the API describes itself and the agent is healthy', async ({ page }) => {
  await page.goto('/api/v1');
  await expect(page).toHaveURL(/\/api\/v1\/openapi\.json$/);
  const doc = JSON.parse((await page.locator('body').innerText()).trim()) as { info: { title: string } };
  expect(doc.info.title).toBe('Account API');
  await expect
    .poll(async () => (await page.request.get('http://127.0.0.1:3901/health').catch(() => undefined))?.status(), { timeout: 20_000 })
    .toBe(200);
});

test('a guest signs in and out in the web client', async ({ page }) => {
  await page.goto('/');
  await page.getByRole('button', { name: 'Continue as guest' }).click();
  await expect(page.getByTestId('signed-in')).toContainText('as a guest');
  await page.screenshot({ path: 'test-results/screenshots/home-guest.png' });
  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page.getByRole('heading', { name: 'Sign in' })).toBeVisible();
});
