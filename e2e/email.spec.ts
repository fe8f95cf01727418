import type { Page } from '@playwright/test';
import { expect, test } from './support/test.js';
import { mailTo } from './support/outbox.js';

/**
 * E-mail sign-in in the web client against the product's local outbox (no SMTP_URL: each
 * message is also written as DATA_DIR/outbox/<id>.json; DATA_DIR is set by playwright.config.ts).
 */
const emailSection = (page: Page) => page.getByRole('region', { name: 'E-mail' });

async function request(page: Page, address: string): Promise<void> {
  await emailSection(page).getByLabel('E-mail address').fill(address);
  await emailSection(page).getByRole('button', { name: 'Send me a sign-in code' }).click();
}

test('signs in with the 6-digit code', async ({ page }) => {
  const address = `code-${Date.now()}@example.com`;
  await page.goto('/');
  await request(page, address);
  await expect(emailSection(page).getByLabel('6-digit code')).toBeFocused();
  const { code } = await mailTo(address);
  await emailSection(page).getByLabel('6-digit code').fill(code);
  await emailSection(page).getByRole('button', { name: 'Sign in', exact: true }).click();
  await expect(page.getByTestId('signed-in')).toContainText(/Signed in/);
});

test('signs in with the link: /auth/verify POSTs its token', async ({ page }) => {
  const address = `link-${Date.now()}@example.com`;
  await page.goto('/');
  await request(page, address);
  await expect(emailSection(page).getByLabel('6-digit code')).toBeVisible();
  const { link } = await mailTo(address);
  await page.goto(new URL(link).pathname + new URL(link).search);
  await expect(page.getByTestId('signed-in')).toContainText(/Signed in/);
  await expect(page).toHaveURL(/\/$/);
  // A used link says so.
  await page.goto(new URL(link).pathname + new URL(link).search);
  await expect(page.getByTestId('verify-status')).toHaveText(/expired or was already used/);
});

test('a rate-limited request counts down before it can be tried again', async ({ page }) => {
  const address = `limited-${Date.now()}@example.com`;
  await page.goto('/');
  // 5 a minute per address and per IP (docs/api.md, "Rate limits in detail"): keep asking until one is refused with Retry-After.
  for (let i = 0; i < 6; i++) {
    const answer = page.waitForResponse((res) => res.url().includes('auth.email.request'));
    await request(page, address);
    if ((await answer).status() === 429) break;
  }
  const alert = emailSection(page).getByRole('alert');
  await expect(alert).toHaveText(/Too many attempts\. Try again in \d+ s\./);
  await expect(emailSection(page).getByRole('button', { name: 'Send me a sign-in code' })).toBeDisabled();
  await page.screenshot({ path: 'test-results/screenshots/rate-limited.png' });
});
