import { readFile } from 'node:fs/promises';
import type { Page } from '@playwright/test';
import { expect, test } from './support/test.js';
import { ownClient } from './support/guest.js';
import { signInByEmail } from './support/outbox.js';
import { enrolAuthenticator, passSecondStep } from './support/second-factor.js';

/**
 * Two-step verification in Chromium against the product, on a phone (375 px) and a desktop
 * (1280 px): an account adds an authenticator app from the Account page by scanning the QR code
 * the page draws (read from its pixels; codes from oathtool), gets its recovery codes (copied and
 * downloaded), sees the app listed; its next sign-in stops at the second step until the app's code
 * is entered, and the one after that passes with a recovery code.
 */

async function openAccount(page: Page): Promise<void> {
  await page.goto('/account');
  await expect(page.getByTestId('account-summary')).toBeVisible();
}

/** Nothing on the page is wider than the screen (no sideways scrolling on a phone). */
const noSidewaysScroll = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth);

for (const viewport of [
  { width: 375, height: 740 },
  { width: 1280, height: 800 },
]) {
  test(`an account turns on two-step verification by QR code, then signs in with the app and with a recovery code (${viewport.width} px)`, async ({
    browser,
  }) => {
    const context = await browser.newContext({ viewport, acceptDownloads: true, permissions: ['clipboard-read', 'clipboard-write'] });
    const page = await context.newPage();
    await ownClient(page);
    const address = `mfa-${viewport.width}-${Date.now().toString(36)}@e2e.example`;
    await page.goto('/');
    let code = await signInByEmail(page, address);
    await expect(page.getByTestId('signed-in')).toContainText('Signed in');
    await openAccount(page);

    const enrolment = await enrolAuthenticator(page);
    expect(enrolment.otpauthUri).toMatch(/^otpauth:\/\/totp\/Agent%20Accounts:mfa-/);
    expect(new Set(enrolment.recoveryCodes).size).toBe(10);
    expect(await noSidewaysScroll(page)).toBe(true);

    await page.getByTestId('copy-recovery-codes').click();
    await expect(page.getByText('Copied.')).toBeVisible();
    expect((await page.evaluate(() => navigator.clipboard.readText())).trim().split('\n')).toEqual(enrolment.recoveryCodes);
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('download-recovery-codes').click()]);
    expect(download.suggestedFilename()).toBe('recovery-codes.txt');
    expect((await readFile(await download.path(), 'utf8')).trim().split('\n')).toEqual(enrolment.recoveryCodes);
    await page.getByTestId('recovery-codes-saved').click();
    await expect(page.getByTestId('mfa-factor')).toContainText('Authenticator app');
    await expect(page.getByTestId('recovery-codes-left')).toHaveText('10 of 10 recovery codes left.');
    await expect(page.getByTestId('activity').first()).toContainText('Two-step verification turned on');

    // The next sign-in stops at the second step: nothing of the app until the code is entered.
    await page.getByTestId('sign-out').click();
    code = await signInByEmail(page, address, code);
    await expect(page.getByRole('heading', { name: 'Two-step verification' })).toBeVisible();
    await expect(page.getByTestId('signed-in')).toHaveCount(0);
    expect(await noSidewaysScroll(page)).toBe(true);
    await page.getByLabel('6-digit code').fill('000000');
    await page.getByRole('button', { name: 'Verify' }).click();
    await expect(page.getByRole('alert').filter({ hasText: /wrong/i })).toBeVisible();
    await passSecondStep(page, enrolment.secret, enrolment.confirmedAt);
    await expect(page.getByTestId('signed-in')).toContainText('Signed in');
    await openAccount(page);
    await expect(page.getByTestId('activity').first()).toContainText('Second step passed');

    // And once more, with a recovery code instead of the app.
    await page.getByTestId('sign-out').click();
    await signInByEmail(page, address, code);
    await page.getByText('Lost your phone? Use a recovery code').click();
    await page.getByLabel('Recovery code').fill(enrolment.recoveryCodes[0]!.toUpperCase());
    await page.getByRole('button', { name: 'Verify' }).last().click();
    await expect(page.getByTestId('signed-in')).toContainText('Signed in');
    await openAccount(page);
    await expect(page.getByTestId('recovery-codes-left')).toHaveText('9 of 10 recovery codes left.');
    await context.close();
  });
}
