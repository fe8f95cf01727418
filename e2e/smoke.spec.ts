import { expect, test } from '@playwright/test';

// The product started by `npm start` answers in a real browser.
test('the account API describes itself and the agent is healthy', async ({ page }) => {
  await page.goto('/api/v1');
  await expect(page).toHaveURL(/\/api\/v1\/openapi\.json$/);
  const doc = JSON.parse((await page.locator('body').innerText()).trim()) as { info: { title: string } };
  expect(doc.info.title).toBe('Account API');

  const health = await page.request.get(`http://127.0.0.1:${process.env.AGENT_E2E_PORT ?? 3901}/health`);
  expect(await health.json()).toMatchObject({ status: 'ok' });
});
