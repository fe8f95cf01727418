import type { Page } from '@playwright/test';
import { expect, test } from './support/test.js';
import { composer, send, signInAsGuest, transcript } from './support/guest.js';

/**
 * The chat page as a chat app, at phone (375×740) and desktop (1280×800) size, in Chromium against
 * the product and the scripted model (e2e/support/model.ts): the page never scrolls sideways,
 * whatever the first message (it becomes the chat's title) and its length; the message box and the
 * latest message are on the first screen (only the transcript scrolls); a Markdown table keeps its
 * header row on a phone and scrolls inside its own box; Delete asks first and a double Enter
 * deletes one chat; Send turns into Stop while a reply streams; and the keyboard alone goes
 * load → type → Enter → Escape (from outside the box) → focus back in the box.
 */
const SIZES = [
  { name: 'phone', width: 375, height: 740 },
  { name: 'desktop', width: 1280, height: 800 },
];
const chatList = (page: Page) => page.getByRole('navigation', { name: 'Chats' });

/** How far the page itself scrolls, sideways and down (0 and 0: only the transcript scrolls). */
const pageOverflow = (page: Page) =>
  page.evaluate(() => {
    const root = document.documentElement;
    return { x: root.scrollWidth - root.clientWidth, y: root.scrollHeight - root.clientHeight, scrollY: window.scrollY };
  });

/** The message box and the newest message are on screen as the page is, without scrolling it. */
async function firstScreenHolds(page: Page): Promise<void> {
  expect(await pageOverflow(page)).toEqual({ x: 0, y: 0, scrollY: 0 });
  await expect(composer(page)).toBeInViewport();
  await expect(page.getByTestId('send')).toBeInViewport();
  await expect(transcript(page).locator('li').last()).toBeInViewport();
}

/** "New chat": on a phone it is in the drawer behind the Chats button. */
async function newChat(page: Page): Promise<void> {
  if (!(await page.getByTestId('new-chat').isVisible())) await page.getByTestId('chats-toggle').click();
  await page.getByTestId('new-chat').click();
}

for (const size of SIZES) {
  test(`${size.name}: no sideways page scroll after a 75- and a 20,000-character first message; box and latest message on the first screen`, async ({
    page,
  }) => {
    await page.setViewportSize({ width: size.width, height: size.height });
    await signInAsGuest(page, `e2e-layout-${size.name}-${Date.now()}`);

    const question = 'Could you compare the three cheapest flights from Lisbon to Reykjavik, May?';
    expect(question).toHaveLength(75);
    await send(page, question);
    await expect(transcript(page).locator('[data-role="assistant"]').last()).toHaveText(/How can I help\?/);
    // The first message is the chat's title, in the list and as the page's heading.
    await expect(page.locator('h1.page-title')).toHaveText(question);
    await firstScreenHolds(page);

    await newChat(page);
    const long = `${'supercalifragilistic '.repeat(950)}${'x'.repeat(20_000 - 21 * 950)}`;
    expect(long).toHaveLength(20_000);
    await send(page, long);
    await expect(transcript(page).locator('[data-role="assistant"]').last()).toHaveText(/Received 20000 characters\./);
    // Both chats are listed (on a phone in the closed drawer, hidden from the accessibility tree).
    await expect(page.locator('nav.chats .chat-title')).toHaveCount(2);
    await firstScreenHolds(page);
    await page.screenshot({ path: `test-results/screenshots/chat-layout-${size.name}.png` });

    // On a phone the chat list is a drawer: open, it still does not widen the page; picking a chat closes it.
    if (size.name === 'phone') {
      await page.getByTestId('chats-toggle').click();
      await expect(chatList(page)).toBeInViewport();
      expect((await pageOverflow(page)).x).toBe(0);
      await page.screenshot({ path: 'test-results/screenshots/chat-drawer-phone.png' });
      await chatList(page)
        .getByRole('button', { name: new RegExp(question.slice(0, 20)) })
        .click();
      await expect(chatList(page)).toBeHidden();
      await expect(transcript(page)).toContainText('How can I help?');
      await expect(composer(page)).toBeFocused();
    } else {
      // On a desktop the sidebar collapses and comes back.
      await page.getByTestId('chats-toggle').click();
      await expect(chatList(page)).toBeHidden();
      await page.getByTestId('chats-toggle').click();
      await expect(chatList(page)).toBeVisible();
    }
  });
}

test('phone: a Markdown table keeps its header row, scrolls in its own box, and breaks no word', async ({ page }) => {
  await page.setViewportSize({ width: 375, height: 740 });
  await signInAsGuest(page, `e2e-table-${Date.now()}`);
  await send(page, 'wide table please');
  const table = transcript(page).locator('[data-role="assistant"] table').last();
  await expect(table.locator('tbody tr')).toHaveCount(2);
  await expect(table.locator('thead th')).toHaveText(['Plan', 'Seats', 'Storage', 'Support', 'Price per month']);
  // The header row is laid out as a row above the body, on screen, not moved away or stacked.
  const header = table.locator('thead th').first();
  await expect(header).toBeInViewport();
  expect(await table.locator('thead').evaluate((el) => getComputedStyle(el).display)).toBe('table-header-group');
  const [head, cell] = await Promise.all([header.boundingBox(), table.locator('tbody td').first().boundingBox()]);
  expect(head!.y + head!.height).toBeLessThanOrEqual(cell!.y + 1);
  // Wider than the phone: it scrolls sideways inside its own box; the page does not.
  expect(await table.evaluate((el) => el.scrollWidth > el.clientWidth)).toBe(true);
  expect((await pageOverflow(page)).x).toBe(0);
  // "Enterprise" stays one word on one line.
  const lines = await table.locator('td', { hasText: 'Enterprise' }).evaluate((td) => {
    const range = document.createRange();
    range.selectNodeContents(td);
    return new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size;
  });
  expect(lines).toBe(1);
});

test('Delete asks first; Enter twice on "Delete chat" deletes exactly one chat and focus goes to the message box', async ({ page }) => {
  await page.setViewportSize({ width: 1280, height: 800 });
  await signInAsGuest(page, `e2e-delete-${Date.now()}`);
  for (const title of ['first chat', 'second chat', 'third chat']) {
    if (title !== 'first chat') await newChat(page);
    await send(page, title);
    await expect(transcript(page).locator('[data-role="assistant"]').last()).toHaveText(/How can I help\?/);
    await expect(chatList(page).getByRole('button', { name: new RegExp(title) })).toBeVisible();
  }
  const titles = chatList(page).locator('.chat-title');
  await expect(titles).toHaveCount(3);

  // Cancel keeps the chat.
  await page.getByTestId('chat-menu').click();
  await page.getByTestId('delete-chat').click();
  const confirm = page.getByTestId('delete-confirm');
  await expect(confirm).toContainText('Delete “third chat”?');
  await confirm.getByRole('button', { name: 'Cancel' }).click();
  await expect(confirm).toBeHidden();
  await expect(composer(page)).toBeFocused();
  await expect(titles).toHaveCount(3);

  // Keyboard: Enter opens the question with its Delete focused; Enter again deletes; the next
  // Enter lands in the (empty) message box, not on another chat's Delete.
  await page.getByTestId('chat-menu').click();
  await page.getByTestId('delete-chat').focus();
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('confirm-delete')).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(composer(page)).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('chat-status')).toHaveText('Chat deleted.');
  await expect(titles).toHaveCount(2);
  await expect(titles).not.toContainText(['third chat']);
  await page.reload();
  await expect(chatList(page).locator('.chat-title')).toHaveCount(2);
  await expect(chatList(page).locator('.chat-title')).toHaveText(['second chat', 'first chat']);
});

for (const size of SIZES) {
  test(`${size.name}: keyboard only: load, type, Enter; Send turns into Stop; Escape outside the box stops; focus back in the box`, async ({ page }) => {
    await page.setViewportSize({ width: size.width, height: size.height });
    await signInAsGuest(page, `e2e-keys-${size.name}-${Date.now()}`);
    // Focus is in the message box from the start.
    await expect(composer(page)).toBeFocused();
    await page.keyboard.type('slow story');
    await expect(page.getByTestId('send')).toBeEnabled({ timeout: 20_000 });
    await page.keyboard.press('Enter');
    const reply = transcript(page).locator('[data-role="assistant"]').last();
    await expect(reply).toContainText('chunk1');
    // While it streams, Send has become Stop, in the same place.
    await expect(page.getByTestId('send')).toBeHidden();
    await expect(page.getByTestId('stop')).toBeVisible();
    await expect(page.getByTestId('stop')).toBeInViewport();
    // Enter over a running reply does not cut it: the message waits in the box.
    await page.keyboard.type('next question');
    await page.keyboard.press('Enter');
    await expect(composer(page)).toHaveValue('next question');
    await expect(transcript(page).locator('[data-role="user"]')).toHaveCount(1);

    // Focus leaves the box (Shift+Tab); Escape from there stops the reply.
    await page.keyboard.press('Shift+Tab');
    await expect(composer(page)).not.toBeFocused();
    await page.keyboard.press('Escape');
    await expect(transcript(page).locator('[data-role="stopped"]')).toHaveText('Reply stopped.');
    await expect(reply).not.toContainText('chunk23');
    await expect(composer(page)).toBeFocused();
    await expect(page.getByTestId('send')).toBeVisible();
    await expect(page.getByTestId('stop')).toBeHidden();
    // And the waiting message goes now.
    await page.keyboard.press('Enter');
    await expect(transcript(page).locator('[data-role="user"]').last()).toHaveText('Younext question');
    await expect(composer(page)).toHaveValue('');
  });
}
