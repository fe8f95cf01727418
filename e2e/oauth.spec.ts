import type { Page } from '@playwright/test';
import { expect, test } from './support/test.js';

const portBase = Number(process.env.E2E_PORT_BASE ?? 3900);

// The full redirect flows in Chromium: web client → provider's login (and consent) → the
// account service's callback → /auth/callback → exchange → signed in. Providers are real
// local ones (e2e/support/providers.ts): oidc-provider as A, a GitHub-shaped OAuth 2 server as B.

const AUTH_CODE_TTL_SECONDS = 8; // playwright.config.ts sets AUTH_CODE_TTL_SECONDS for this stack

/** Provider A (oidc-provider's dev pages): login, then consent. */
async function loginAtA(page: Page, login: string, opts: { deny?: boolean } = {}) {
  await expect(page).toHaveURL(new RegExp(`127\\.0\\.0\\.1:${portBase + 10}/interaction/`));
  await page.locator('input[name=login]').fill(login);
  await page.locator('input[name=password]').fill('any password');
  await page.locator('button[type=submit]').click();
  await expect(page.getByRole('button', { name: 'Continue' })).toBeVisible();
  if (opts.deny) await page.getByRole('link', { name: '[ Cancel ]' }).click();
  else await page.locator('button[type=submit]').click();
}

/** Provider B (GitHub-shaped): one authorize page. */
async function loginAtB(page: Page, login: string, opts: { deny?: boolean } = {}) {
  await expect(page).toHaveURL(new RegExp(`127\\.0\\.0\\.1:${portBase + 11}/login/oauth/authorize`));
  if (opts.deny) return page.getByRole('link', { name: 'Cancel' }).click();
  await page.locator('input[name=login]').fill(login);
  await page.locator('input[name=password]').fill('any password');
  await page.locator('button[type=submit]').click();
}

const signedIn = (page: Page) => page.getByTestId('signed-in');

for (const [provider, label, loginAt] of [
  ['idpa', 'Sign in with provider A', loginAtA],
  ['idpb', 'Sign in with provider B', loginAtB],
] as const) {
  test(`signs in with ${provider} through the provider's pages`, async ({ page }) => {
    await page.goto('/');
    await page.getByRole('button', { name: label }).click();
    await loginAt(page, `e2e-${provider}-user`);
    await expect(signedIn(page)).toContainText(/Signed in as \S+/);
    await expect(page).toHaveURL(new RegExp(`127\\.0\\.0\\.1:${portBase}/$`));
    await page.screenshot({ path: `test-results/screenshots/home-${provider}.png` });
    // Signing in again as the same person lands in the same account.
    const first = await signedIn(page).textContent();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: label }).click();
    if (provider === 'idpb') await loginAt(page, `e2e-${provider}-user`); // A remembers its session and consent
    await expect(signedIn(page)).toHaveText(first ?? '');
  });

  test(`consent denied at ${provider} shows a clear message`, async ({ page }) => {
    await page.goto('/');
    await page.getByRole('button', { name: label }).click();
    await loginAt(page, 'e2e-denier', { deny: true });
    await expect(page.getByTestId('callback-error')).toHaveText(/You declined the sign-in at the provider/);
    await expect(page).toHaveURL(/\/auth\/callback$/); // the error and any code are gone from the address bar
    await page.getByRole('button', { name: 'Back to sign-in' }).click();
    await expect(page.getByRole('heading', { name: 'Sign in' })).toBeVisible();
  });
}

test('a replayed callback is refused', async ({ page }) => {
  const callbacks: string[] = [];
  page.on('request', (request) => {
    if (request.url().includes('/api/v1/auth/oauth/idpb/callback')) callbacks.push(request.url());
  });
  await page.goto('/');
  await page.getByRole('button', { name: 'Sign in with provider B' }).click();
  await loginAtB(page, 'e2e-replay');
  await expect(signedIn(page)).toContainText('Signed in as ');
  expect(callbacks).toHaveLength(1);
  await page.goto(callbacks[0] as string);
  await expect(page.getByTestId('callback-error')).toHaveText(/expired or was already used/);
});

test('an auth code exchanged after its lifetime is refused', async ({ page }) => {
  // The web client's exchange call is held back past the code's lifetime, then let through.
  // (Redirect targets cannot be intercepted, so the delay goes on the client's own request.)
  let held = 0;
  await page.route(
    (url) => url.pathname === '/trpc/auth.oauth.exchange',
    async (route) => {
      held += 1;
      await new Promise((resolve) => setTimeout(resolve, (AUTH_CODE_TTL_SECONDS + 1) * 1000));
      await route.continue();
    },
  );
  await page.goto('/');
  await page.getByRole('button', { name: 'Sign in with provider A' }).click();
  await loginAtA(page, 'e2e-slowpoke');
  await expect(page.getByTestId('callback-status')).toHaveText('Signing you in…');
  await expect(page.getByTestId('callback-error')).toHaveText(/This sign-in has expired, was already used/, { timeout: (AUTH_CODE_TTL_SECONDS + 10) * 1000 });
  expect(held).toBe(1);
});

test('a guest links provider A and keeps the same account', async ({ page }) => {
  await page.goto('/');
  await page.getByRole('button', { name: 'Continue as guest' }).click();
  await expect(signedIn(page)).toContainText('as a guest');
  await expect(signedIn(page)).toHaveAttribute('data-user-id', /^[0-9a-f-]{36}$/);
  const guestId = await signedIn(page).getAttribute('data-user-id');
  await page.getByRole('button', { name: 'Link provider A' }).click();
  await loginAtA(page, 'e2e-upgraded-guest');
  await expect(signedIn(page)).toHaveAttribute('data-user-id', guestId ?? '');
  // The linked provider login, not an id.
  await expect(signedIn(page)).toContainText('Signed in as ');
  await expect(signedIn(page)).toContainText('e2e-upgraded-guest@example.test');
});
