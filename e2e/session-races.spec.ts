import type { Page } from '@playwright/test';
import { expect, test } from './support/test.js';
import { signInAsGuest } from './support/guest.js';
import { gate } from '../test/support/gate.js';

/**
 * The web client's session where calls and sign-outs cross, each race forced by holding one
 * request (or its answer) in the browser until the other side has moved: a call still on its way
 * at sign-out, or answered after the next sign-in, ends nothing and wipes nothing; "Sign out
 * everywhere" cuts calls off without a "session has ended"; a refresh that cannot reach the
 * service keeps the session.
 */

const pathIs = (path: string) => (url: URL) => url.pathname === path;

/**
 * Holds the first request to `path` on its way to the service until `release()` (`answer`: the
 * service answers at once and the browser gets it on release). `reached` resolves once it is held.
 */
async function hold(page: Page, path: string, mode: 'request' | 'answer') {
  const released = gate();
  const held = gate();
  await page.route(pathIs(path), async (route) => {
    if (mode === 'request') {
      held.open();
      await released.opened;
      await route.continue();
    } else {
      const response = await route.fetch();
      held.open();
      await released.opened;
      await route.fulfill({ response });
    }
  });
  return { reached: held.opened, release: released.open };
}

const answered = (page: Page, path: string) => page.waitForResponse((response) => pathIs(path)(new URL(response.url())));

/** What a page does with an answer comes a moment after it: wait a few frames of it. */
const settle = (page: Page) => page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 300)));

test('a call still on its way at sign-out leaves the sign-in page alone: what the user types there stays', async ({ page }) => {
  await signInAsGuest(page, `races-late-call-${Date.now().toString(36)}`);
  const activity = await hold(page, '/trpc/account.activity', 'request');
  await page.goto('/account');
  await activity.reached;
  const loggedOut = answered(page, '/trpc/tokens.logout');
  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page.getByRole('heading', { name: 'Sign in' })).toBeVisible();
  expect((await loggedOut).status()).toBe(200);
  const address = page.getByRole('region', { name: 'E-mail' }).getByLabel('E-mail address');
  await address.fill('someone@example.com');
  const refused = answered(page, '/trpc/account.activity');
  activity.release();
  expect((await refused).status()).toBe(401);
  await settle(page);
  await expect(address).toHaveValue('someone@example.com');
  await expect(page.getByText('Your session has ended')).toHaveCount(0);
});

test('a 401 of the session left, answered after the next sign-in, does not end the new one', async ({ page }) => {
  await signInAsGuest(page, `races-next-${Date.now().toString(36)}`);
  const first = await page.getByTestId('signed-in').getAttribute('data-user-id');
  const activity = await hold(page, '/trpc/account.activity', 'request');
  await page.goto('/account');
  await activity.reached;
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('button', { name: 'Continue as guest' }).click();
  await expect(page.getByTestId('signed-in')).toContainText('as a guest');
  const second = await page.getByTestId('signed-in').getAttribute('data-user-id');
  expect(second).not.toBe(first);
  const refused = answered(page, '/trpc/account.activity');
  activity.release();
  expect((await refused).status()).toBe(401);
  await settle(page);
  await expect(page.getByTestId('signed-in')).toHaveAttribute('data-user-id', second!);
  await page.reload();
  await expect(page.getByTestId('signed-in')).toHaveAttribute('data-user-id', second!);
});

test('"Sign out everywhere": the calls it cuts off say nothing of a session that has ended', async ({ page }) => {
  await signInAsGuest(page, `races-everywhere-${Date.now().toString(36)}`);
  await page.getByRole('link', { name: 'Account' }).click();
  await expect(page.getByTestId('sign-out-everywhere')).toBeVisible();
  const everywhere = await hold(page, '/trpc/tokens.logoutAll', 'answer');
  await page.getByTestId('sign-out-everywhere').click();
  await everywhere.reached;
  // Every session has ended; the page has not heard so yet, and the user goes on clicking.
  const cutOff = page.waitForResponse((response) => response.status() === 401);
  await page.getByRole('link', { name: 'Files' }).click();
  await cutOff;
  await settle(page);
  everywhere.release();
  await expect(page.getByRole('heading', { name: 'Sign in' })).toBeVisible();
  await settle(page);
  await expect(page.getByText('Your session has ended')).toHaveCount(0);
});

test('a refresh that cannot reach the service keeps the session: the page says so and goes on once it can', async ({ page }) => {
  await signInAsGuest(page, `races-offline-${Date.now().toString(36)}`);
  await expect(page.getByTestId('signed-in')).toContainText('messages left today');
  // The network drops the refresh and the access token looks expired: as after a laptop's sleep.
  const refresh = pathIs('/trpc/tokens.refresh');
  await page.route(refresh, (route) => route.abort('internetdisconnected'));
  await page.evaluate(() => {
    const tokens = JSON.parse(localStorage.getItem('agent.tokens')!) as { access_expires_at: number };
    localStorage.setItem('agent.tokens', JSON.stringify({ ...tokens, access_expires_at: 0 }));
  });
  const dropped = page.waitForEvent('requestfailed', (request) => refresh(new URL(request.url())));
  await page.getByRole('link', { name: 'Subagents' }).click();
  await dropped;
  await expect(page.getByRole('alert').filter({ hasText: 'cannot be reached' })).toBeVisible();
  await expect(page.getByRole('heading', { name: 'Sign in' })).toHaveCount(0);
  expect(await page.evaluate(() => localStorage.getItem('agent.tokens'))).not.toBeNull();
  await page.unroute(refresh);
  await page.getByRole('link', { name: 'Subagents' }).click();
  await expect(page.getByTestId('subagents')).not.toContainText('Loading', { timeout: 20_000 });
  await expect(page.getByRole('alert').filter({ hasText: 'cannot be reached' })).toHaveCount(0);
  await expect(page.getByTestId('signed-in')).toContainText('as a guest');
  // It did refresh this time, in the same session.
  expect(await page.evaluate(() => (JSON.parse(localStorage.getItem('agent.tokens')!) as { access_expires_at: number }).access_expires_at)).toBeGreaterThan(
    Date.now(),
  );
});

test('a second tab follows the first: signed out with it, then showing the account it signs in to', async ({ page, context }) => {
  await signInAsGuest(page, `races-tabs-${Date.now().toString(36)}`);
  const first = await page.getByTestId('signed-in').getAttribute('data-user-id');
  const other = await context.newPage();
  await other.goto('/files');
  await expect(other.getByTestId('signed-in')).toHaveAttribute('data-user-id', first!);
  // A rotation in the first tab changes nothing in the second.
  await page.evaluate(() => {
    const tokens = JSON.parse(localStorage.getItem('agent.tokens')!) as { access_expires_at: number };
    localStorage.setItem('agent.tokens', JSON.stringify({ ...tokens, access_expires_at: 0 }));
  });
  const rotated = answered(page, '/trpc/tokens.refresh');
  await page.reload();
  expect((await rotated).status()).toBe(200);
  await settle(other);
  await expect(other).toHaveURL(/\/files$/);
  await expect(other.getByTestId('signed-in')).toHaveAttribute('data-user-id', first!);
  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(other.getByRole('heading', { name: 'Sign in' })).toBeVisible();
  await expect(other.getByText('Your session has ended')).toHaveCount(0);
  await page.getByRole('button', { name: 'Continue as guest' }).click();
  await expect(page.getByTestId('signed-in')).toContainText('as a guest');
  const second = await page.getByTestId('signed-in').getAttribute('data-user-id');
  expect(second).not.toBe(first);
  await expect(other.getByTestId('signed-in')).toHaveAttribute('data-user-id', second!);
});
