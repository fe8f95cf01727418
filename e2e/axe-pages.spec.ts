import type { Page } from '@playwright/test';
import { expect, test } from './support/test.js';
import { axeProblems } from './support/axe.js';
import { send, signInAsGuest, transcript } from './support/guest.js';
import { signInByEmail } from './support/outbox.js';
import { enrolAuthenticator } from './support/second-factor.js';

/**
 * axe on every page of the web client, at a phone's 375×740 and a desktop's 1280×800, in the
 * light and the dark colour scheme: sign-in, the e-mail link's page (a spent link), the provider
 * callback's error, and signed in as a guest the chat (with a reply holding code), files,
 * subagents, messenger, account and connectors (a guest's explanation); as an admin, two-step
 * verification (the recovery codes, the Account page with the app, the second step of the next
 * sign-in) and the admin page. No serious or
 * critical finding. A page is loaded once per size (what it lays out at load, the chat list's
 * drawer say, depends on the width) and checked in both schemes without a reload: the dark scheme
 * only changes colours (client/web/src/style.css).
 */
const SIZES = [
  { width: 375, height: 740 },
  { width: 1280, height: 800 },
];

/** Each page at both sizes and in both schemes; `ready` waits until the page has what it shows. */
async function check(page: Page, path: string, ready: (page: Page) => Promise<void>): Promise<void> {
  for (const size of SIZES) {
    await page.emulateMedia({ colorScheme: 'light' });
    await page.setViewportSize(size);
    await page.goto(path);
    await ready(page);
    for (const colorScheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme });
      expect(await axeProblems(page), `${path} at ${size.width}×${size.height}, ${colorScheme}`).toEqual([]);
    }
  }
}

const heading = (name: string | RegExp) => async (page: Page) => {
  await expect(page.getByRole('heading', { level: 1, name })).toBeVisible({ timeout: 20_000 });
};

test('signed out: sign-in, a spent e-mail link, a provider callback error', async ({ page }) => {
  test.setTimeout(120_000);
  await check(page, '/', heading('Sign in'));
  await check(page, '/auth/verify?token=spent-or-made-up', async (p) => {
    await expect(p.getByRole('alert')).toBeVisible({ timeout: 20_000 });
  });
  await check(page, '/auth/callback?error=access_denied', async (p) => {
    await expect(p.getByTestId('callback-error')).toBeVisible();
  });
});

test('a guest: chat with a reply, files, subagents, messenger, account, connectors', async ({ page }) => {
  test.setTimeout(240_000);
  await signInAsGuest(page, `e2e-axe-pages-${Date.now()}`);
  await send(page, 'markdown please');
  await expect(transcript(page).locator('code.hljs')).toBeVisible({ timeout: 20_000 });
  await check(page, '/', async (p) => {
    await expect(transcript(p).locator('code.hljs')).toBeVisible({ timeout: 20_000 });
  });
  await check(page, '/files', async (p) => {
    await expect(p.getByTestId('file-tree')).not.toContainText('Loading', { timeout: 20_000 });
  });
  await check(page, '/subagents', heading('Subagents'));
  await check(page, '/messenger', async (p) => {
    await expect(p.getByTestId('messenger-status')).not.toContainText('Loading', { timeout: 20_000 });
  });
  await check(page, '/account', async (p) => {
    await expect(p.getByTestId('session')).toHaveCount(1, { timeout: 20_000 });
  });
  // A guest's is the explanation; a full account's list, form and switches: e2e/connectors.spec.ts.
  await check(page, '/connectors', async (p) => {
    await expect(p.getByTestId('connectors-refused')).toBeVisible({ timeout: 20_000 });
  });
});

test('an admin: two-step verification (its recovery codes, the second step) and the admin page', async ({ page }) => {
  test.setTimeout(180_000);
  await page.goto('/');
  // An admin of its own (ADMIN_EMAILS in playwright.config.ts): e2e/admin.spec.ts enrols the operator's app.
  const code = await signInByEmail(page, 'auditor@e2e.example');
  await expect(page.getByTestId('signed-in')).toContainText('Signed in as');
  await page.goto('/account');
  await expect(page.getByTestId('add-authenticator')).toBeVisible({ timeout: 20_000 });
  await enrolAuthenticator(page);
  expect(await axeProblems(page), 'the recovery codes').toEqual([]);
  await page.getByTestId('recovery-codes-saved').click();
  await check(page, '/account', async (p) => {
    await expect(p.getByTestId('mfa-factor')).toBeVisible({ timeout: 20_000 });
  });
  await check(page, '/admin', async (p) => {
    await expect(p.getByTestId('admin-page')).toBeVisible();
    await expect(p.getByRole('region', { name: 'Users' })).toBeVisible({ timeout: 20_000 });
  });
  await page.getByTestId('sign-out').click();
  await signInByEmail(page, 'auditor@e2e.example', code);
  // The code's answer first: check() loads the page again, which would cut a sign-in still on its way.
  await heading('Two-step verification')(page);
  await check(page, '/', heading('Two-step verification'));
});
