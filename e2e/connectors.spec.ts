import type { Page } from '@playwright/test';
import { expect, test } from './support/test.js';
import { startEverythingServer } from '../test/support/mcp-everything.js';
import { startOAuthMcpServer } from '../test/support/mcp-oauth-server.js';
import { filesContaining, processesContaining } from '../test/support/secret-search.js';
import { axeProblems } from './support/axe.js';
import { send, signInAsGuest, transcript } from './support/guest.js';
import { signInByEmail } from './support/outbox.js';

/**
 * The Connectors page in Chromium against the product (CONNECTORS_ALLOW_PRIVATE=1 in
 * playwright.config.ts) and MCP servers this spec starts on loopback: a full account adds the
 * reference server (`@modelcontextprotocol/server-everything`, streamable HTTP), switches a tool
 * off and on with the keyboard, and its agent (the scripted model's `use <connector> <tool>`) calls
 * `everything__echo`: the chat shows the tool card and the answer; rename and remove (asked
 * first). A server behind OAuth (test/support/mcp-oauth-server.ts with its consent page): Deny
 * brings the browser back with the reason, Allow brings it back connected, the tool answers in a
 * chat, and the token is then in no process's environment or command line and no file of the
 * product's data directory (agent workspaces included). At 375 and 1280 px the page scrolls no
 * sideways and axe finds nothing serious, in both colour schemes (screenshots in
 * test-results/screenshots/); a guest is told why not.
 */
const DATA_DIR = 'test-results/e2e-data';
const WIDTHS = [375, 1280];

async function signInFull(page: Page, who: string): Promise<void> {
  await page.goto('/');
  await signInByEmail(page, `${who}-${Date.now()}@e2e.example`);
  await expect(page.getByTestId('signed-in')).toContainText('Signed in as', { timeout: 20_000 });
  await page.getByRole('link', { name: 'Connectors' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'Connectors' })).toBeFocused();
}

async function addConnector(page: Page, name: string, url: string): Promise<void> {
  await page.getByLabel('Server URL').fill(url);
  await page.getByLabel('Name', { exact: true }).fill(name);
  await page.getByRole('button', { name: 'Add connector' }).click();
}

/** No sideways scroll and nothing serious for axe, at each width, in the light and the dark scheme; a screenshot of each (`shot`). */
async function fitsAndPasses(page: Page, what: string, shot: string): Promise<void> {
  for (const width of WIDTHS) {
    await page.setViewportSize({ width, height: 800 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), `${what} at ${width} px`).toBe(true);
    for (const colorScheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme });
      expect(await axeProblems(page), `${what} at ${width} px, ${colorScheme}`).toEqual([]);
      await page.screenshot({ path: `test-results/screenshots/connectors-${shot}-${width}-${colorScheme}.png`, fullPage: true });
    }
  }
  await page.emulateMedia({ colorScheme: 'light' });
}

async function ask(page: Page, message: string): Promise<void> {
  await page.getByRole('link', { name: 'Chat', exact: true }).click();
  await send(page, message);
}

test('a full account adds the reference server, switches a tool, its agent calls it; rename and remove', async ({ page }) => {
  test.setTimeout(180_000);
  const server = await startEverythingServer();
  try {
    await signInFull(page, 'connectors');
    await expect(page.getByTestId('connectors')).toContainText('No connectors yet.', { timeout: 20_000 });
    await addConnector(page, 'everything', server.url);
    await expect(page.getByTestId('connector-notice')).toHaveText('Added everything: connected.', { timeout: 30_000 });
    const card = page.locator('li[data-connector="everything"]');
    await expect(card.getByTestId('connector-status')).toHaveText('Connected');
    await expect(card.locator('code').first()).toHaveText(server.url);
    await card.getByText(/^Tools \(\d+ of \d+ on\)$/).click();
    const echo = card.getByRole('switch', { name: 'everything__echo' });
    await expect(echo).toBeChecked();
    await fitsAndPasses(page, 'the Connectors page with a connector and its tools', 'full');

    // Off with the keyboard; the switch is what the service keeps (a reload shows it off).
    await echo.focus();
    await page.keyboard.press('Space');
    await expect(card.getByRole('status')).toHaveText('echo switched off.');
    await page.reload();
    await page.locator('li[data-connector="everything"] summary').click();
    await expect(echo).not.toBeChecked({ timeout: 20_000 });
    await expect(card.getByRole('switch', { name: 'everything__get-sum' })).toBeChecked();
    await echo.check();
    await expect(card.getByRole('status')).toHaveText('echo switched on.');

    await ask(page, 'use everything echo hello from the browser');
    await expect(transcript(page).locator('[data-role="tool"]').last()).toContainText('everything__echo', { timeout: 60_000 });
    await expect(transcript(page).locator('[data-role="assistant"]').last()).toContainText('The connector answered:', { timeout: 60_000 });
    await expect(transcript(page).locator('[data-role="assistant"]').last()).toContainText('hello from the browser');

    await page.getByRole('link', { name: 'Connectors' }).click();
    await card.getByRole('button', { name: 'Rename everything' }).click();
    const rename = page.getByLabel('New name for everything');
    await expect(rename).toBeFocused();
    // Escape closes it, the focus back on Rename.
    await rename.press('Escape');
    await expect(card.getByRole('button', { name: 'Rename everything' })).toBeFocused();
    await card.getByRole('button', { name: 'Rename everything' }).press('Enter');
    await rename.fill('reference');
    await rename.press('Enter');
    const renamed = page.locator('li[data-connector="reference"]');
    await expect(renamed.getByRole('heading', { name: 'reference' })).toBeFocused();
    await renamed.getByRole('button', { name: 'Remove reference' }).click();
    await renamed.getByRole('button', { name: 'Cancel' }).click();
    await expect(renamed.getByRole('button', { name: 'Remove reference' })).toBeFocused();
    await renamed.getByRole('button', { name: 'Remove reference' }).click();
    await renamed.getByRole('button', { name: 'Yes, remove reference' }).click();
    await expect(page.getByTestId('connectors')).toContainText('No connectors yet.');
    await page.reload();
    await expect(page.getByTestId('connectors')).toContainText('No connectors yet.', { timeout: 20_000 });
  } finally {
    await server.stop();
  }
});

test('a server behind OAuth: declined, then allowed at its provider, the tool answers, the token is nowhere', async ({ page }) => {
  test.setTimeout(180_000);
  const server = await startOAuthMcpServer({ consent: true });
  try {
    await signInFull(page, 'connectors-oauth');

    // Declined at the provider: back on the page with the reason, still waiting for a sign-in.
    await addConnector(page, 'declined', server.url);
    await expect(page.getByTestId('connector-notice')).toHaveText('Added declined. Sign in to it so your agent may use it.', { timeout: 30_000 });
    const declined = page.locator('li[data-connector="declined"]');
    await expect(declined.getByTestId('connector-status')).toHaveText('Needs sign-in');
    await declined.getByRole('button', { name: 'Sign in to declined' }).click();
    await expect(page.getByRole('heading', { name: 'Allow access?' })).toBeVisible({ timeout: 20_000 });
    await page.getByRole('button', { name: 'Deny' }).click();
    await expect(page.locator('main [role="alert"]')).toHaveText(/^Signing in to declined did not work: You declined at the provider/, { timeout: 20_000 });
    await expect(declined.getByTestId('connector-status')).toHaveText('Needs sign-in');
    expect(new URL(page.url()).search).toBe('');

    // Allowed: back on the page, connected; a new link is asked for, the first one is used up.
    await addConnector(page, 'secure', server.url);
    const secure = page.locator('li[data-connector="secure"]');
    await secure.getByRole('button', { name: 'Sign in to secure' }).click();
    await page.getByRole('button', { name: 'Allow' }).click();
    await expect(page.getByTestId('connector-notice')).toHaveText('Signed in: secure is connected.', { timeout: 20_000 });
    await expect(secure.getByTestId('connector-status')).toHaveText('Connected');
    expect(new URL(page.url()).pathname + new URL(page.url()).search).toBe('/connectors');
    await secure.locator('summary').click();
    await expect(secure.getByRole('switch', { name: 'secure__whoami' })).toBeChecked();
    const ids = { declined: await declined.getAttribute('data-connector-id'), secure: await secure.getAttribute('data-connector-id') };

    await ask(page, 'use secure whoami');
    await expect(transcript(page).locator('[data-role="tool"]').last()).toContainText('secure__whoami', { timeout: 60_000 });
    await expect(transcript(page).locator('[data-role="assistant"]').last()).toContainText('signed in as client', { timeout: 60_000 });

    // A made-up link to the page says nothing of what its address claims.
    await page.goto('/connectors?error=Your+account+is+locked.+Call+us&status=connected');
    await expect(page.locator('main [role="alert"]')).toHaveText(/^The sign-in did not work: its link was unknown/, { timeout: 20_000 });
    await expect(page.getByTestId('connector-notice')).toBeEmpty();
    await page.goto(`/connectors?connector=${ids.declined}&error=Your+account+is+locked`);
    await expect(page.locator('main [role="alert"]')).toHaveText('Signing in to declined did not work: Sign-in refused (access_denied)', { timeout: 20_000 });
    await page.goto(`/connectors?connector=${ids.secure}&error=Your+account+is+locked`);
    await expect(secure.getByTestId('connector-status')).toHaveText('Connected', { timeout: 20_000 });
    await expect(page.locator('main [role="alert"]')).toBeEmpty();

    const token = server.issued.at(-1) ?? '';
    expect(token.length).toBeGreaterThan(20);
    expect(await processesContaining(token)).toEqual([]);
    // The search reaches the agent's own files: the tool's answer is stored there, its token is not.
    await expect.poll(() => filesContaining(DATA_DIR, 'signed in as client'), { timeout: 10_000 }).not.toEqual([]);
    expect(await filesContaining(DATA_DIR, token)).toEqual([]);
  } finally {
    await server.close();
  }
});

test('a guest is told connectors are for full accounts, and how to become one', async ({ page }) => {
  test.setTimeout(120_000);
  await signInAsGuest(page, `e2e-connectors-guest-${Date.now()}`);
  await page.getByRole('link', { name: 'Connectors' }).click();
  const refused = page.getByTestId('connectors-refused');
  await expect(refused).toContainText('They are for full accounts', { timeout: 20_000 });
  await expect(page.getByLabel('Server URL')).toHaveCount(0);
  await expect(page.locator('main [role="alert"]')).toBeEmpty();
  await fitsAndPasses(page, 'the Connectors page of a guest', 'guest');
  await refused.getByRole('link', { name: 'Link an e-mail address, a provider or a wallet' }).click();
  await expect(page).toHaveURL(/\/account$/);
});
