import type { Page } from '@playwright/test';
import { expect, test } from './support/test.js';
import { ownClient } from './support/guest.js';
import { hexToString, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { mailTo, signInByEmail } from './support/outbox.js';
import { injectWallet } from './support/wallet.js';

/**
 * The Account page in Chromium against the product: a passkey registered and used with
 * Chromium's virtual authenticator (CDP WebAuthn), e-mail linked to a wallet account, another
 * session signed out from here, and the account deleted.
 */

const userIdOf = async (page: Page) => {
  await expect(page.getByTestId('signed-in')).toHaveAttribute('data-user-id', /^[0-9a-f-]{36}$/);
  return (await page.getByTestId('signed-in').getAttribute('data-user-id')) ?? undefined;
};

async function openAccount(page: Page): Promise<void> {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Account' }).click();
  await expect(page.getByTestId('account-summary')).toBeVisible();
}

/** Signs in with a code and waits until signed in; `previousCode`: the code of an earlier sign-in to the same address. */
async function signIn(page: Page, address: string, previousCode?: string): Promise<string> {
  const code = await signInByEmail(page, address, previousCode);
  await expect(page.getByTestId('signed-in')).toContainText('Signed in');
  return code;
}

test('a guest adds a passkey (and so keeps the account), then signs in with it', async ({ page, baseURL }) => {
  // Passkeys need a domain name: the same product, reached as localhost (playwright.config.ts).
  const origin = (baseURL ?? '').replace('127.0.0.1', 'localhost');
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  await page.goto(`${origin}/`);
  await page.getByTestId('guest-signin').click();
  await expect(page.getByTestId('signed-in')).toContainText('as a guest');
  const guestId = await userIdOf(page);
  await openAccount(page);
  await page.getByLabel('Passkey name (optional)').fill('Virtual key');
  await page.getByTestId('passkey-add').click();
  await expect(page.getByTestId('identity')).toHaveCount(1);
  await expect(page.getByTestId('identity')).toContainText('Virtual key');
  // A passkey keeps the account but vouches for no person: still on guest terms (docs/security.md).
  await expect(page.getByTestId('account-summary')).toContainText('Unverified account (guest limits until an e-mail address or a provider is linked)');
  await expect(page.getByTestId('account-id')).toHaveText(guestId ?? '');
  const stored = (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials;
  expect(stored).toHaveLength(1);
  expect(stored[0]?.isResidentCredential).toBe(true);

  await page.getByTestId('sign-out').click();
  await page.getByTestId('passkey-signin').click();
  await expect(page.getByTestId('signed-in')).toHaveAttribute('data-user-id', guestId ?? '');
  // The authenticator signed with the registered key (its counter moved on).
  const after = (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials;
  expect(after[0]?.signCount).toBeGreaterThan(stored[0]?.signCount ?? 0);
});

test('a wallet account links an e-mail address from the Account page', async ({ page }) => {
  const wallet = privateKeyToAccount(generatePrivateKey());
  await injectWallet(page, async ({ method, params }) => {
    if (method === 'eth_requestAccounts') return { result: [wallet.address] };
    if (method === 'personal_sign') return { result: await wallet.signMessage({ message: hexToString((params as [Hex])[0]) }) };
    return { error: { code: 4200, message: `unsupported method ${method}` } };
  });
  await page.goto('/');
  await page.getByRole('button', { name: 'Connect wallet' }).click();
  await expect(page.getByTestId('signed-in')).toContainText('Signed in');
  const userId = await userIdOf(page);
  await openAccount(page);
  const address = `linked-${Date.now()}@example.com`;
  await page.getByLabel('E-mail address').fill(address);
  await page.getByRole('button', { name: 'Send me a sign-in code' }).click();
  await page.getByLabel('6-digit code').fill((await mailTo(address)).code);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await expect(page.getByTestId('identity')).toHaveCount(2);
  await expect(page.getByTestId('identity').nth(0)).toContainText(wallet.address);
  await expect(page.getByTestId('identity').nth(1)).toContainText(address);
  await expect(page.getByTestId('account-summary')).toHaveText(/^Account, created /);
  await expect(page.getByTestId('account-id')).toHaveText(userId ?? '');
  // Linking replaced this browser's session instead of adding one.
  await expect(page.getByTestId('session')).toHaveCount(1);
});

test('signs another session out from the Account page', async ({ browser }) => {
  const address = `sessions-${Date.now()}@example.com`;
  const one = await (await browser.newContext()).newPage();
  const two = await (await browser.newContext({ userAgent: 'SecondDevice/1.0' })).newPage();
  await Promise.all([ownClient(one), ownClient(two)]);
  await one.goto('/');
  const first = await signIn(one, address);
  await two.goto('/');
  await signIn(two, address, first);
  await openAccount(one);
  await expect(one.getByTestId('session')).toHaveCount(2);
  await expect(one.locator('[data-testid=session][data-current=true]')).toContainText('This device');
  // Sessions are named by device: a program's user agent by its name, the raw string as the tooltip.
  const second = one.locator('[data-testid=session]:not([data-current])').getByTestId('session-device');
  await expect(second).toHaveText('SecondDevice');
  await expect(second).toHaveAttribute('title', 'SecondDevice/1.0');
  await one.getByRole('button', { name: 'Sign out SecondDevice', exact: true }).click();
  await expect(one.getByTestId('session')).toHaveCount(1);
  await expect(one.getByTestId('activity').first()).toContainText('Session signed out');
  // The other device finds its session ended at its next call.
  // (Its own polls may find out first and show the sign-in page: the click is then not waited for.)
  await two
    .getByRole('navigation', { name: 'Main' })
    .getByRole('link', { name: 'Account' })
    .click({ timeout: 5_000 })
    .catch(() => undefined);
  await expect(two.getByTestId('signin-notice')).toBeVisible();
});

test('deletes the account after a typed confirmation', async ({ page, request }) => {
  const address = `leaving-${Date.now()}@example.com`;
  await page.goto('/');
  await signIn(page, address);
  const tokens = JSON.parse((await page.evaluate(() => localStorage.getItem('agent.tokens'))) ?? '{}') as { access_token: string };
  await openAccount(page);
  await page.getByTestId('delete-account').click();
  await page.getByLabel(/Type DELETE to confirm/).fill('DELETE');
  await page.getByTestId('delete-account-confirm').click();
  await expect(page.getByRole('heading', { name: 'Sign in' })).toBeVisible();
  expect((await request.get('/api/v1/auth/me', { headers: { authorization: `Bearer ${tokens.access_token}` } })).status()).toBe(401);
});
