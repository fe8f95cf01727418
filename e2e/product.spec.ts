import type { Page } from '@playwright/test';
import { expect, test } from './support/test.js';
import { ownClient } from './support/guest.js';

/**
 * The product end to end in Chromium, as `npm start` runs it, with the scripted model
 * (e2e/support/model.ts): a guest signs in, chats (streamed), reloads mid-reply and sees it
 * continue, has the agent write a file, uploads one, visits every page, and signs out.
 * Screenshots of the main pages go to test-results/screenshots/.
 */
const shot = (page: Page, name: string) => page.screenshot({ path: `test-results/screenshots/${name}.png` });
const transcript = (page: Page) => page.getByTestId('transcript');

async function signInAsGuest(page: Page, device: string): Promise<void> {
  await page.addInitScript((id) => {
    if (!localStorage.getItem('agent.device_id')) localStorage.setItem('agent.device_id', id);
  }, device);
  await page.goto('/');
  await expect(page.getByRole('heading', { name: 'Sign in' })).toBeVisible();
  await shot(page, 'signin');
  await page.getByRole('button', { name: 'Continue as guest' }).click();
  await expect(page.getByTestId('signed-in')).toContainText('as a guest');
}

async function send(page: Page, message: string): Promise<void> {
  await page.getByLabel('Message', { exact: true }).fill(message);
  await page.getByRole('button', { name: 'Send' }).click();
}

test('a guest chats, reloads mid-reply, gets a file written, uploads one, and signs out', async ({ page }) => {
  await signInAsGuest(page, `e2e-product-${Date.now()}`);

  // A reply streams in.
  await send(page, 'hello');
  await expect(transcript(page).locator('[data-role="user"]')).toHaveText(/hello/);
  await expect(transcript(page).locator('[data-role="assistant"]').last()).toHaveText(/Hello! I am your agent\. How can I help\?/);
  await expect(page.getByTestId('stop')).toBeHidden();

  // Reload in the middle of a long reply: the page finds the running reply and follows it to the end.
  await send(page, 'slow story');
  await expect(transcript(page)).toContainText('chunk2');
  await expect(page.getByTestId('stop')).toBeVisible();
  await page.reload();
  await expect(page.getByTestId('chat-status')).toHaveText('The agent is replying…');
  await expect(transcript(page).locator('[data-role="assistant"]').last()).toContainText('chunk23', { timeout: 20_000 });
  await expect(transcript(page).locator('[data-role="assistant"]').last()).toContainText(/^Agentchunk0 chunk1 /);
  await expect(transcript(page).getByText('slow story', { exact: true })).toHaveCount(1);
  await expect(page.getByTestId('stop')).toBeHidden();

  // The agent writes a file with a tool and sends it: both show up as they happen; the file previews.
  await send(page, 'write a file please');
  await expect(transcript(page).locator('[data-role="tool"]').first()).toContainText('Tool: write_file');
  const file = transcript(page).locator('[data-role="file"]');
  await expect(file).toContainText('notes/hello.txt');
  await expect(transcript(page)).toContainText('I wrote notes/hello.txt for you.');
  await file.getByRole('button', { name: 'Preview' }).click();
  await expect(file.locator('pre')).toHaveText('Hello from your agent.\n');
  await transcript(page).evaluate((el) => (el.scrollTop = el.scrollHeight));
  await page.screenshot({ path: 'test-results/screenshots/chat.png', fullPage: true });

  // Chats are listed; a new chat starts empty and the old one keeps its history.
  await page.getByTestId('new-chat').click();
  await expect(transcript(page).locator('li')).toHaveCount(0);
  await page.getByRole('navigation', { name: 'Chats' }).getByRole('button', { name: 'hello' }).click();
  await expect(transcript(page)).toContainText('I wrote notes/hello.txt for you.');

  // Files: the tool's file is in the tree; an upload shows progress and lands in the tree.
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Files' }).click();
  await expect(page.getByRole('heading', { name: 'Files', level: 1 })).toBeFocused();
  const tree = page.getByTestId('file-tree');
  await expect(tree.getByRole('button', { name: 'hello.txt', exact: true })).toBeVisible();
  await page
    .getByLabel('File', { exact: true })
    .setInputFiles({ name: 'upload-me.txt', mimeType: 'text/plain', buffer: Buffer.from('uploaded through the browser\n') });
  await page.getByRole('button', { name: 'Upload' }).click();
  await expect(page.getByTestId('upload-status')).toHaveText(/Uploaded uploads\/upload-me\.txt/);
  await tree.getByRole('button', { name: 'upload-me.txt', exact: true }).click();
  await expect(page.getByRole('region', { name: /Preview/ }).locator('pre')).toHaveText('uploaded through the browser\n');
  await shot(page, 'files');

  // Subagents and messenger go through the REST proxy: not on this agent yet, or not for guests.
  await page.getByRole('link', { name: 'Subagents' }).click();
  await expect(page.getByTestId('subagents')).toBeVisible();
  await expect(page.getByTestId('subagents')).not.toHaveText('Loading…');
  await shot(page, 'subagents');
  await page.getByRole('link', { name: 'Messenger' }).click();
  await expect(page.getByTestId('messenger-status')).toContainText(/Guest accounts cannot connect one|not available/);
  await shot(page, 'messenger');

  // Phone width: the same chat, one column.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.getByRole('link', { name: 'Chat' }).click();
  await expect(transcript(page)).toContainText('I wrote notes/hello.txt for you.');
  await shot(page, 'chat-phone');
  await page.setViewportSize({ width: 1280, height: 720 });

  await page.getByRole('link', { name: 'Account' }).click();
  await shot(page, 'account');
  await page.getByTestId('sign-out').click();
  await expect(page.getByRole('heading', { name: 'Sign in' })).toBeVisible();
});

test('a subagent appears, completes, and its result reaches the chat that started it', async ({ page }) => {
  await signInAsGuest(page, 'e2e-subagent-device');
  await send(page, 'start a helper');
  await expect(transcript(page)).toContainText('A helper is on it.');
  await expect(transcript(page)).toContainText('spawn_subagent');
  await page.getByRole('link', { name: 'Subagents' }).click();
  const run = page.getByTestId('subagents').locator('li', { hasText: 'counter' });
  await expect(run).toHaveAttribute('data-status', 'completed', { timeout: 20_000 });
  await expect(run).toContainText('one, two, three');
  await run.getByRole('button', { name: 'counter' }).click();
  await expect(page.getByRole('region', { name: /Details: counter/ }).locator('pre')).toHaveText('one, two, three');
  await shot(page, 'subagents-completed');
  // The announcement is a pending message (the layout polls GET /pending every 10 s), shown as a
  // card in the chat that started the run, not in the inbox above every page.
  await page.getByRole('link', { name: 'Chat' }).click();
  await expect(transcript(page).locator('[data-role="subagent"]')).toContainText('one, two, three', { timeout: 20_000 });
  await expect(page.getByRole('region', { name: 'Messages from your agent' })).toBeHidden();
});

/**
 * Changes the stored tokens as the next load of the page starts, before the app runs: changed
 * while the page runs, a call it makes meanwhile (its polls) would refresh with them and be cut
 * by the reload before it stored the new pair, and the reloaded page would then present a
 * refresh token already rotated.
 */
async function onNextLoad(page: Page, step: string, patch: Record<string, unknown>): Promise<void> {
  await page.addInitScript(
    ({ step, patch }) => {
      if (sessionStorage.getItem(step)) return;
      sessionStorage.setItem(step, 'done');
      const tokens = JSON.parse(localStorage.getItem('agent.tokens') ?? '{}') as Record<string, unknown>;
      localStorage.setItem('agent.tokens', JSON.stringify({ ...tokens, ...patch }));
    },
    { step, patch },
  );
}

test('an expired access token refreshes silently; a dead session goes back to sign-in', async ({ page }) => {
  await signInAsGuest(page, `e2e-expiry-${Date.now()}`);
  await expect(page.getByTestId('signed-in')).toHaveText('Signed in as a guest · 50 of 50 messages left today');
  const before = await page.evaluate(() => (JSON.parse(localStorage.getItem('agent.tokens') ?? '{}') as { access_token: string }).access_token);
  // The stored access token looks expired: the SDK refreshes before the next call.
  await onNextLoad(page, 'e2e.expired', { access_expires_at: 0 });
  await page.reload();
  await expect(page.getByTestId('signed-in')).toHaveText('Signed in as a guest · 50 of 50 messages left today');
  const after = await page.evaluate(() => (JSON.parse(localStorage.getItem('agent.tokens') ?? '{}') as { access_token: string }).access_token);
  expect(after).not.toBe(before);

  // A refresh token the service refuses: sign-in again, saying why.
  await onNextLoad(page, 'e2e.refused', { access_expires_at: 0, refresh_token: 'not.a.token' });
  await page.reload();
  await expect(page.getByTestId('signin-notice')).toHaveText('Your session has ended. Please sign in again.');
  await expect(page.getByRole('heading', { name: 'Sign in' })).toBeVisible();
});

test('sign out everywhere ends the other sessions too', async ({ browser }) => {
  const device = `e2e-everywhere-${Date.now()}`;
  const one = await browser.newPage();
  const two = await browser.newPage();
  await Promise.all([ownClient(one), ownClient(two)]);
  await signInAsGuest(one, device);
  await signInAsGuest(two, device);
  // Both pages have loaded their chat (otherwise a load still on its way meets the sign-out first).
  await expect(one.getByRole('button', { name: 'Send' })).toBeEnabled({ timeout: 20_000 });
  await expect(two.getByRole('button', { name: 'Send' })).toBeEnabled({ timeout: 20_000 });
  await one.getByRole('link', { name: 'Account' }).click();
  await one.getByTestId('sign-out-everywhere').click();
  await expect(one.getByRole('heading', { name: 'Sign in' })).toBeVisible();
  // The other page's access token is dead at once (sessions are checked on every call).
  await two.getByRole('link', { name: 'Files' }).click();
  await expect(two.getByRole('heading', { name: 'Sign in' })).toBeVisible();
  await expect(two.getByTestId('signin-notice')).toBeVisible();
  await one.close();
  await two.close();
});
