import type { Browser, Page } from '@playwright/test';
import { expect, test } from './support/test.js';
import { claimedAgents, killNow } from './support/agents.js';
import { axeProblems } from './support/axe.js';
import { composer, ownClient, send, signInAsGuest, transcript } from './support/guest.js';
import { XSS_FILE } from './support/xss.js';

/**
 * The chat page as people use it, in Chromium against the product and the scripted model
 * (e2e/support/model.ts): the transcript follows the reply unless the reader scrolled up;
 * Markdown is rendered and hostile output stays inert; the agent killed mid-reply is reported,
 * the reply marked cut off and the next message goes through; a message sent offline stays in
 * the composer; the chat list follows the account to a second browser context and nothing of it
 * is left for the next person after sign-out; axe finds nothing serious at desktop and phone width.
 */
const chatList = (page: Page) => page.getByRole('navigation', { name: 'Chats' });

/** Fails the test on any dialog (alert, confirm, prompt) the page opens. */
function noDialogs(page: Page): string[] {
  const dialogs: string[] = [];
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  return dialogs;
}

test('the transcript follows the reply, stays put when scrolled up, and jumps back; keyboard sends and adds lines', async ({ page }) => {
  await signInAsGuest(page, `e2e-scroll-${Date.now()}`);
  // Shift+Enter is a new line, not a send.
  await composer(page).fill('long');
  await composer(page).press('Shift+Enter');
  await composer(page).pressSequentially(' list');
  await expect(composer(page)).toHaveValue('long\n list');
  await expect(transcript(page).locator('[data-role="user"]')).toHaveCount(0);
  await send(page, 'long list please');
  const view = transcript(page);
  const distanceFromBottom = () => view.evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight);
  await expect(view).toContainText('line 20');
  // Following: the newest line is in view while the reply streams.
  expect(await view.evaluate((el) => el.scrollHeight > el.clientHeight)).toBe(true);
  expect(await distanceFromBottom()).toBeLessThan(60);

  // The reader scrolls up: the view stays where they are, and offers a way back.
  await view.evaluate((el) => el.scrollTo({ top: 0 }));
  await expect(page.getByTestId('jump-latest')).toBeVisible();
  await expect(view).toContainText('line 50');
  expect(await view.evaluate((el) => el.scrollTop)).toBe(0);
  await page.getByTestId('jump-latest').click();
  await expect(page.getByTestId('jump-latest')).toBeHidden();
  await expect(view).toContainText('line 60');
  await expect.poll(distanceFromBottom).toBeLessThan(60);
});

test('Markdown renders; model output, file names and titles never run script or inject elements', async ({ page }) => {
  const dialogs = noDialogs(page);
  await signInAsGuest(page, `e2e-xss-${Date.now()}`);

  await send(page, 'markdown please');
  const reply = transcript(page).locator('[data-role="assistant"]').last();
  await expect(reply.getByRole('heading', { name: 'Plan' })).toBeVisible();
  await expect(reply.locator('li')).toHaveText(['first item', 'second']);
  await expect(reply.locator('table td')).toHaveText(['1', '2']);
  const link = reply.getByRole('link', { name: 'the docs' });
  await expect(link).toHaveAttribute('href', 'https://example.com/docs');
  await expect(link).toHaveAttribute('rel', /noopener/);
  await expect(reply.locator('code.hljs .hljs-keyword').first()).toHaveText('const');
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
  await reply.getByRole('button', { name: 'Copy ts' }).click();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe('const answer: number = 42;\n');

  // A chat whose first message (its title) is markup, answered with the XSS corpus and a file
  // whose name and caption are markup.
  await page.getByTestId('new-chat').click();
  await send(page, 'xss <img src=x onerror=alert(16)><script>alert(17)</script>');
  await expect(transcript(page).locator('[data-role="file"]')).toContainText(XSS_FILE);
  await expect(transcript(page)).toContainText('plain link');
  const xssReply = transcript(page).locator('[data-role="assistant"]').last();
  await expect(xssReply.locator('pre code')).toContainText('<img src=x onerror=alert(10)><script>alert(11)</script>');
  await expect(chatList(page).locator('.chat-title').first()).toHaveText('xss <img src=x onerror=alert(16)><script>alert(17)</script>');

  // Renamed to markup too, through the page.
  await page.getByTestId('chat-menu').click();
  await page.getByTestId('rename-chat').click();
  await page.getByLabel('Chat title').fill('<svg onload=alert(18)>');
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(chatList(page).locator('.chat-title').first()).toHaveText('<svg onload=alert(18)>');

  const injected = async () =>
    page.evaluate(() => {
      const bad =
        'script, iframe, object, embed, form, svg, img:not(.preview-image), [onerror], [onload], [ontoggle], [style], .injected, a[href^="javascript:" i], a[href^="data:" i]';
      const where = ['[data-testid="transcript"]', 'nav[aria-label="Chats"]'];
      return [...document.querySelectorAll(where.flatMap((w) => bad.split(', ').map((b) => `${w} ${b}`)).join(', '))].map((el) => el.outerHTML);
    });
  expect(await injected()).toEqual([]);
  await page.reload();
  await expect(transcript(page)).toContainText('plain link');
  await expect(transcript(page).locator('[data-role="file"]')).toContainText(XSS_FILE);
  expect(await injected()).toEqual([]);
  expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
  expect(dialogs).toEqual([]);
});

test('the agent killed mid-reply: the page says so, marks the reply cut off, and the next message goes through', async ({ page }) => {
  // The page starts the account's agent as soon as it lists the chats, at sign-in.
  const before = new Set(claimedAgents().keys());
  await signInAsGuest(page, `e2e-kill-${Date.now()}`);
  await send(page, 'hello');
  await expect(transcript(page).locator('[data-role="assistant"]').last()).toHaveText(/How can I help\?/);
  const mine = [...claimedAgents()].filter(([agent]) => !before.has(agent));
  expect(mine).toHaveLength(1);

  await send(page, 'slow story');
  await expect(transcript(page).locator('[data-role="assistant"]').last()).toContainText('chunk2');
  killNow(mine[0]![1]);
  const connection = page.getByTestId('connection');
  await expect(connection).toContainText('Connection to your agent lost', { timeout: 5_000 });
  // The product restarts the agent; the page reconnects, finds the run gone, and says so.
  await expect(transcript(page).locator('[data-role="cut-off"]')).toBeVisible({ timeout: 20_000 });
  await expect(transcript(page).locator('[data-role="assistant"]').last()).toHaveAttribute('data-cut-off', 'true');
  await expect(connection).toBeHidden();
  await expect(page.getByTestId('stop')).toBeHidden();

  await send(page, 'hello again');
  await expect(transcript(page).locator('[data-role="user"]').last()).toHaveText('Youhello again');
  // The model sees the lost turn's message too (so the scripted one answers slowly): a new reply streams.
  const next = transcript(page).locator('li').last();
  await expect(next).toHaveAttribute('data-role', 'assistant');
  await expect(next).toContainText('chunk0');
  await expect(next).not.toHaveAttribute('data-cut-off', 'true');
  await page.getByTestId('stop').click();
  await expect(transcript(page).locator('[data-role="stopped"]')).toBeVisible();

  // Offline: the message is not lost, it stays in the composer with the reason; back online it goes.
  await page.context().setOffline(true);
  await send(page, 'sent while offline');
  await expect(page.getByRole('alert').filter({ hasText: 'Not sent' })).toBeVisible();
  await expect(composer(page)).toHaveValue('sent while offline');
  await expect(transcript(page).locator('[data-role="user"]').last()).toHaveText('Youhello again');
  await page.context().setOffline(false);
  await composer(page).press('Enter');
  await expect(transcript(page).locator('[data-role="user"]').last()).toHaveText('Yousent while offline');
  await expect(composer(page)).toHaveValue('');
});

async function storageOf(page: Page): Promise<{ local: string[]; session: string[]; idb: string[] }> {
  return page.evaluate(async () => ({
    local: Object.keys(localStorage),
    session: Object.keys(sessionStorage).filter((k) => !k.startsWith('e2e.')),
    idb: (await indexedDB.databases()).map((d) => d.name ?? ''),
  }));
}

test('the chat list follows the account to a second browser context; after sign-out nothing of it is left', async ({ browser }: { browser: Browser }) => {
  const device = `e2e-list-${Date.now()}`;
  const one = await (await browser.newContext()).newPage();
  const two = await (await browser.newContext()).newPage();
  await Promise.all([ownClient(one), ownClient(two)]);
  await signInAsGuest(one, device);
  await send(one, 'Trip to Lisbon');
  await expect(transcript(one).locator('[data-role="assistant"]').last()).toHaveText(/How can I help\?/);

  // The same account in another context (same guest device): the chat is listed there, with its time.
  await signInAsGuest(two, device);
  const listed = chatList(two).getByRole('button', { name: /Trip to Lisbon/ });
  await expect(listed).toBeVisible();
  await expect(listed.locator('time')).toHaveAttribute('datetime', /^\d{4}-\d\d-\d\dT/);
  await listed.click();
  await expect(transcript(two)).toContainText('How can I help?');
  await two.getByTestId('chat-menu').click();
  await two.getByTestId('rename-chat').click();
  await two.getByLabel('Chat title').fill('Lisbon, May');
  await two.getByLabel('Chat title').press('Enter');
  await expect(chatList(two).getByRole('button', { name: /Lisbon, May/ })).toBeVisible();

  // A running reply shows as live in the other context's list.
  await send(one, 'slow story');
  await expect(transcript(one)).toContainText('chunk1');
  await two.reload();
  await expect(
    chatList(two)
      .getByRole('button', { name: /Lisbon, May/ })
      .getByTestId('live-marker'),
  ).toBeVisible();
  await one.reload();
  await expect(chatList(one).getByRole('button', { name: /Lisbon, May/ })).toBeVisible();
  await one.getByTestId('stop').click();

  // Signing out leaves nothing of the account in the page or in browser storage.
  await one.getByTestId('sign-out').click();
  await expect(one.getByRole('heading', { name: 'Sign in' })).toBeVisible();
  await expect(one.locator('body')).not.toContainText('Lisbon');
  expect(await storageOf(one)).toEqual({ local: [], session: [], idb: [] });
  // The next person on this browser gets an account of their own, with no chats.
  await one.getByRole('button', { name: 'Continue as guest' }).click();
  await expect(one.getByTestId('signed-in')).toContainText('as a guest');
  await expect(chatList(one).locator('.chat-title')).toHaveText(['New chat']);
  await expect(one.locator('body')).not.toContainText('Lisbon');
  await one.context().close();
  await two.context().close();
});

const overflow = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);

test('axe finds no serious or critical violation on any page, at desktop and at 375 px without horizontal scrolling; skip link and focus', async ({ page }) => {
  await page.goto('/');
  await expect(page.getByRole('heading', { name: 'Sign in' })).toBeVisible();
  const pages = ['/', '/files', '/subagents', '/messenger', '/account'];
  for (const width of [1280, 375]) {
    await page.setViewportSize({ width, height: 800 });
    await page.goto('/');
    await expect(page.getByRole('heading', { name: 'Sign in' })).toBeVisible();
    expect(await axeProblems(page), `sign-in at ${width}`).toEqual([]);
    expect(await overflow(page), `sign-in at ${width}`).toBe(0);
  }
  await page.setViewportSize({ width: 1280, height: 800 });
  await signInAsGuest(page, `e2e-axe-${Date.now()}`);
  await send(page, 'markdown please');
  await expect(transcript(page).locator('code.hljs')).toBeVisible();
  await send(page, 'write a file please');
  await expect(transcript(page)).toContainText('I wrote notes/hello.txt for you.');

  // Keyboard: the chat page puts focus in the message box on load. On a page that leaves focus
  // at the top, the first Tab reaches the skip link, which moves focus past the navigation.
  await page.reload();
  await expect(transcript(page)).toContainText('I wrote notes/hello.txt for you.');
  await expect(composer(page)).toBeFocused();
  await page.goto('/files');
  await expect(page.locator('h1.page-title')).toBeVisible();
  await page.keyboard.press('Tab');
  const skip = page.getByRole('link', { name: 'Skip to content' });
  await expect(skip).toBeFocused();
  await expect(skip).toBeInViewport();
  await page.keyboard.press('Enter');
  await expect(page.locator('main#content')).toBeFocused();
  await page.keyboard.press('Tab');
  // Focus is visible: an outline is drawn on the focused control.
  expect(await page.evaluate(() => getComputedStyle(document.activeElement as Element).outlineStyle)).not.toBe('none');

  for (const width of [1280, 375]) {
    await page.setViewportSize({ width, height: 800 });
    for (const path of pages) {
      await page.goto(path);
      await expect(page.locator('h1.page-title')).toBeVisible();
      await expect(page.getByText('Loading…')).toHaveCount(0);
      expect(await axeProblems(page), `${path} at ${width}`).toEqual([]);
      expect(await overflow(page), `${path} at ${width}`).toBe(0);
    }
  }
});
