/** Signing in as a guest and sending a message from the chat page, as the chat specs do it. */
import { expect, type Page } from '@playwright/test';

export const transcript = (page: Page) => page.getByTestId('transcript');
export const composer = (page: Page) => page.getByLabel('Message', { exact: true });

/**
 * A client of its own (a documentation address, only ever a header; playwright.config.ts trusts
 * it from loopback): what the service allows per client (guest sign-ups, account reads, sign-in
 * mails) is then counted apart from the other specs, which all come from 127.0.0.1. A random /64
 * of IPv6's documentation prefix (the service counts IPv6 per /64): one of 254 IPv4 addresses let
 * two specs of one minute meet in a bucket, one in a few hundred runs.
 */
export async function ownClient(page: Page): Promise<void> {
  const hextet = () => Math.floor(Math.random() * 0x10000).toString(16);
  await page.setExtraHTTPHeaders({ 'x-forwarded-for': `2001:db8:${hextet()}:${hextet()}::1` });
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
