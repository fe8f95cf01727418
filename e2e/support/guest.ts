/** Signing in as a guest and sending a message from the chat page, as the chat specs do it. */
import type { Page } from '@playwright/test';
import { clientAddress, expect } from './test.js';

export const transcript = (page: Page) => page.getByTestId('transcript');
export const composer = (page: Page) => page.getByLabel('Message', { exact: true });

/** A client of its own (support/test.ts) for a page of a context the test made itself. */
export async function ownClient(page: Page): Promise<void> {
  await page.setExtraHTTPHeaders({ 'x-forwarded-for': clientAddress() });
}

/** A new guest whose device id is `device` (set on the first load only, so a reload keeps the session's). */
export async function signInAsGuest(page: Page, device: string): Promise<void> {
  await page.addInitScript((id) => {
    if (!localStorage.getItem('agent.device_id') && !sessionStorage.getItem('e2e.device.used')) {
      localStorage.setItem('agent.device_id', id);
      sessionStorage.setItem('e2e.device.used', '1');
    }
  }, device);
  await page.goto('/');
  await page.getByRole('button', { name: 'Continue as guest' }).click();
  await expect(page.getByTestId('signed-in')).toContainText('as a guest');
}

export async function send(page: Page, message: string): Promise<void> {
  // Send waits while the chat loads (the agent may still be starting), and is Stop while a reply streams.
  await expect(page.getByTestId('send')).toBeVisible({ timeout: 20_000 });
  await expect(page.getByTestId('send')).toBeEnabled({ timeout: 20_000 });
  await composer(page).fill(message);
  await composer(page).press('Enter');
}
