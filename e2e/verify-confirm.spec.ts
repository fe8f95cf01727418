import { randomUUID } from 'node:crypto';
import type { Page } from '@playwright/test';
import { clientAddress, expect, test } from './support/test.js';
import { signInAsGuest } from './support/guest.js';
import { mailTo } from './support/outbox.js';

/**
 * A guest opens a sign-in link a stranger asked for (docs/security.md, "Whose account a sign-in
 * joins"): the service does not join the stranger's address to the guest, and the verify page
 * asks before it switches accounts. Declining keeps the guest; accepting signs in to the
 * address's own account. The stranger's mail is asked for straight from the API, from a client
 * of its own, with no token: nobody in this browser asked for it.
 */
async function strangersLink(page: Page, address: string): Promise<string> {
  const res = await page.request.post('/api/v1/auth/login/email', {
    data: { email: address },
    headers: { 'x-forwarded-for': clientAddress() },
  });
  expect(res.status()).toBe(200);
  const { link } = await mailTo(address);
  const url = new URL(link);
  return url.pathname + url.search;
}

/** The signed-in user's id, from the stored access token's `sub`. */
const signedInUser = (page: Page) =>
  page.evaluate(() => {
    const stored = JSON.parse(localStorage.getItem('agent.tokens') ?? 'null') as { access_token: string } | null;
    if (!stored) return null;
    const payload = stored.access_token.split('.')[1] ?? '';
    return (JSON.parse(atob(payload.replace(/-/g, '+').replace(/_/g, '/'))) as { sub: string }).sub;
  });

const QUESTION = /^Sign in as s•••@example\.com\? You are signed in as a guest; this will sign you out of it\.$/;

test("a guest who opens a stranger's link is asked first; declining keeps the guest", async ({ page }) => {
  await signInAsGuest(page, `verify-decline-${randomUUID()}`);
  const guest = await signedInUser(page);
  const link = await strangersLink(page, `stranger-${Date.now()}@example.com`);
  await page.goto(link);
  await expect(page.getByTestId('verify-status')).toHaveText(QUESTION);
  await expect(page.getByTestId('verify-switch')).toBeFocused();
  // Nothing has moved while the question is open.
  expect(await signedInUser(page)).toBe(guest);
  await page.screenshot({ path: 'test-results/screenshots/verify-confirm.png' });
  await page.getByTestId('verify-stay').click();
  await expect(page).toHaveURL(/\/$/);
  await expect(page.getByTestId('signed-in')).toContainText('as a guest');
  expect(await signedInUser(page)).toBe(guest);
});

test("a guest who accepts a stranger's link is signed in to the address's own account, not upgraded", async ({ page }) => {
  await signInAsGuest(page, `verify-accept-${randomUUID()}`);
  const guest = await signedInUser(page);
  const address = `stranger-${Date.now()}@example.com`;
  const link = await strangersLink(page, address);
  await page.goto(link);
  await expect(page.getByTestId('verify-status')).toHaveText(QUESTION);
  await page.getByTestId('verify-switch').click();
  await expect(page.getByTestId('signed-in')).toHaveText(`Signed in as ${address}`);
  const switched = await signedInUser(page);
  expect(switched).not.toBeNull();
  expect(switched).not.toBe(guest);
});
