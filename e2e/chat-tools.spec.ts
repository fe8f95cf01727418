import type { Page } from '@playwright/test';
import { expect, test } from './support/test.js';
import { axeProblems } from './support/axe.js';
import { composer, send, signInAsGuest, transcript } from './support/guest.js';
import { gate } from '../test/support/gate.js';

/**
 * The tools on each message and in the message box, in Chromium against the product and the
 * scripted model (e2e/support/model.ts): Copy puts a message's Markdown source on the clipboard
 * and says "Copied"; Regenerate replaces the last reply with a new run (on the agent too: a
 * reload shows the replacement only); Edit replaces a user message and everything after it (the
 * model sees only what is left); files attach with the paperclip, by drop and by paste, land in
 * `uploads/` and are named in the message, and a refused file or a failed upload says why
 * without losing the message; long messages fold behind "Show more" at phone and desktop size;
 * a subagent's result is a Markdown card in the chat that started it, not a box above every page.
 */
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 375, height: 740 };

const users = (page: Page) => transcript(page).locator('[data-role="user"]');
const replies = (page: Page) => transcript(page).locator('[data-role="assistant"]');
const bodyText = (item: ReturnType<Page['locator']>) => item.locator('.body').first();

async function start(page: Page, name: string, size = DESKTOP): Promise<void> {
  await page.setViewportSize(size);
  await signInAsGuest(page, `e2e-tools-${name}-${Date.now()}`);
}

/** Sends and waits until the reply has ended (Send is back). */
async function exchange(page: Page, message: string, reply: RegExp | string): Promise<void> {
  await send(page, message);
  await expect(replies(page).last()).toContainText(reply);
  await expect(page.getByTestId('send')).toBeVisible();
}

test('Copy puts a reply’s Markdown source and a user message on the clipboard, and says Copied', async ({ page, context }) => {
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  await start(page, 'copy');
  await exchange(page, 'markdown please', 'See the docs');

  const reply = replies(page).last();
  const copyReply = reply.getByRole('button', { name: 'Copy this reply' });
  await expect(copyReply).toBeVisible();
  await copyReply.click();
  await expect(reply.getByRole('status')).toHaveText('Copied');
  const source = await page.evaluate(() => navigator.clipboard.readText());
  // The Markdown as the model wrote it, not the rendered text.
  expect(source).toBe(
    '# Plan\n\n- first **item**\n- second\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nSee [the docs](https://example.com/docs).\n\n```ts\nconst answer: number = 42;\n```\n',
  );

  // The user's message, from the keyboard: its Copy is reachable with Tab and says so too.
  const mine = users(page).last();
  await mine.getByRole('button', { name: 'Copy this message' }).focus();
  await page.keyboard.press('Enter');
  await expect(mine.getByRole('status')).toHaveText('Copied');
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe('markdown please');
  // The confirmation goes after a moment; the message's own text never held the button's words.
  await expect(mine.getByTestId('copy-status')).toHaveText('');
  await expect(mine).toHaveText('Youmarkdown please');
});

test('Regenerate replaces the last reply with a new run, on the agent too; not while a reply streams', async ({ page }) => {
  await start(page, 'regen');
  await exchange(page, 'roll the dice', /Roll number \d+\./);
  const first = ((await bodyText(replies(page).last()).textContent()) ?? '').trim();
  expect(first).toMatch(/^Roll number \d+\.$/);

  await replies(page).last().getByRole('button', { name: 'Regenerate this reply' }).click();
  await expect(bodyText(replies(page).last())).not.toHaveText(first);
  await expect(bodyText(replies(page).last())).toHaveText(/^Roll number \d+\.\s*$/);
  await expect(page.getByTestId('send')).toBeVisible();
  const second = ((await bodyText(replies(page).last()).textContent()) ?? '').trim();
  expect(second).not.toBe(first);
  await expect(users(page)).toHaveCount(1);
  await expect(replies(page)).toHaveCount(1);

  // The agent's history holds the replacement only.
  await page.reload();
  await expect(users(page)).toHaveText(['Youroll the dice']);
  await expect(replies(page)).toHaveCount(1);
  await expect(bodyText(replies(page).last())).toHaveText(second);

  // While a reply streams there is no Regenerate; once it is stopped, the stopped reply has one.
  await send(page, 'slow roll');
  await expect(replies(page).last()).toContainText('chunk1');
  await expect(page.getByRole('button', { name: 'Regenerate this reply' })).toHaveCount(0);
  await page.getByTestId('stop').click();
  await expect(transcript(page).locator('[data-role="stopped"]')).toHaveText('Reply stopped.');
  await expect(replies(page).last().getByRole('button', { name: 'Regenerate this reply' })).toBeVisible();
  await expect(page.getByRole('button', { name: 'Regenerate this reply' })).toHaveCount(1);
});

for (const size of [
  { name: 'desktop', ...DESKTOP },
  { name: 'phone', ...PHONE },
]) {
  test(`${size.name}: Edit replaces a user message and everything after it; the model sees only what is left`, async ({ page }) => {
    await start(page, `edit-${size.name}`, size);
    await exchange(page, 'what did I say first', 'You said: what did I say first');
    await exchange(page, 'what did I say second', 'You said: what did I say first | what did I say second');

    // Edit the first message, from the keyboard: Edit, type, Enter.
    const first = users(page).first();
    await first.getByRole('button', { name: 'Edit this message' }).click();
    const box = first.getByRole('textbox', { name: 'Edit your message' });
    await expect(box).toBeFocused();
    await expect(box).toHaveValue('what did I say first');
    await box.fill('what did I say instead');
    await box.press('Enter');

    await expect(users(page)).toHaveText(['Youwhat did I say instead']);
    await expect(replies(page).last()).toContainText('You said: what did I say instead');
    await expect(replies(page)).toHaveCount(1);
    expect(await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)).toBe(0);

    // The agent agrees after a reload.
    await page.reload();
    await expect(users(page)).toHaveText(['Youwhat did I say instead']);
    await expect(replies(page)).toHaveCount(1);
    await expect(replies(page).last()).toContainText('You said: what did I say instead');

    // Escape cancels an edit (and stops nothing); the message stays as it was.
    await users(page).first().getByRole('button', { name: 'Edit this message' }).click();
    await page.keyboard.press('Escape');
    await expect(users(page).first().getByRole('textbox')).toHaveCount(0);
    await expect(users(page).first().getByRole('button', { name: 'Edit this message' })).toBeFocused();
  });
}

test('files attach with the paperclip, by drop and by paste; they land in uploads/ and the message names them', async ({ page }) => {
  await start(page, 'attach');
  await expect(page.getByTestId('send')).toBeEnabled({ timeout: 20_000 });

  // Picker: two files, one removed again.
  const chooser = page.waitForEvent('filechooser');
  await page.getByRole('button', { name: 'Attach files' }).click();
  await (await chooser).setFiles([
    { name: 'report.txt', mimeType: 'text/plain', buffer: Buffer.from('quarterly numbers\n') },
    { name: 'drop-me.txt', mimeType: 'text/plain', buffer: Buffer.from('not wanted\n') },
  ]);
  const chips = page.getByTestId('attachment');
  await expect(chips).toHaveCount(2);
  await page.getByRole('button', { name: 'Remove drop-me.txt' }).click();
  await expect(chips).toHaveText([/report\.txt/]);

  // Drop onto the composer, and paste into the box.
  await page.evaluate(() => {
    const form = document.querySelector('form.composer')!;
    const dt = new DataTransfer();
    dt.items.add(new File(['dropped bytes\n'], 'dropped.csv', { type: 'text/csv' }));
    form.dispatchEvent(new DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true }));
    form.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  });
  await composer(page).fill('Please read these');
  await page.evaluate(() => {
    const dt = new DataTransfer();
    dt.items.add(new File([new Uint8Array([137, 80, 78, 71])], 'pasted.png', { type: 'image/png' }));
    document.querySelector('#chat-input')!.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
  });
  await expect(chips).toHaveText([/report\.txt/, /dropped\.csv/, /pasted\.png/]);
  // Pasting a file does not paste its name into the text.
  await expect(composer(page)).toHaveValue('Please read these');

  const uploads: string[] = [];
  page.on('response', async (res) => {
    if (res.url().endsWith('/files/upload') && res.status() === 200) uploads.push(((await res.json()) as { path: string }).path);
  });
  // Send may come before the agent has started (under load): the message and its files then wait and go once it has.
  await page.getByTestId('send').click();
  const sent = users(page).last();
  await expect(sent).toHaveText('YouPlease read these\n\nAttached: uploads/report.txt\nAttached: uploads/dropped.csv\nAttached: uploads/pasted.png', {
    timeout: 20_000,
  });
  await expect(chips).toHaveCount(0);
  await expect(composer(page)).toHaveValue('');
  expect(uploads.sort()).toEqual(['uploads/dropped.csv', 'uploads/pasted.png', 'uploads/report.txt']);

  // They are in the workspace: the Files page lists them.
  await page.getByRole('link', { name: 'Files' }).click();
  const tree = page.getByTestId('file-tree');
  await expect(tree).toContainText('report.txt');
  await expect(tree).toContainText('dropped.csv');
  await expect(tree).not.toContainText('drop-me.txt');
});

test('files sent while the agent is still starting wait with the message, then go first and the message names them', async ({ page }) => {
  // The chat's calls to the agent are held: the page stays at "Starting your agent" until released.
  const agentCalls = gate();
  await page.route(
    (url) => url.pathname.startsWith('/trpc/agent.chat'),
    async (route) => {
      await agentCalls.opened;
      await route.continue();
    },
  );
  await start(page, 'attach-early');
  const chooser = page.waitForEvent('filechooser');
  await page.getByRole('button', { name: 'Attach files' }).click();
  await (await chooser).setFiles([{ name: 'early.txt', mimeType: 'text/plain', buffer: Buffer.from('before the agent\n') }]);
  await composer(page).fill('Read this when you can');
  await page.getByTestId('send').click();
  await expect(page.getByTestId('queued')).toHaveText('Your message and its files will be sent as soon as your agent is ready.');
  await expect(users(page)).toHaveCount(0);
  agentCalls.open();
  await expect(users(page).last()).toHaveText('YouRead this when you can\n\nAttached: uploads/early.txt', { timeout: 20_000 });
  await expect(page.getByTestId('queued')).toHaveText('');
  await expect(page.getByTestId('attachment')).toHaveCount(0);
});

test('a file too large is refused when added; a failed upload says why and the message is never lost', async ({ page }) => {
  await start(page, 'attach-errors');
  await expect(page.getByTestId('send')).toBeEnabled({ timeout: 20_000 });
  await composer(page).fill('my words stay');

  // Over a guest's 5 MB: said at once, no chip, nothing uploaded.
  const chooser = page.waitForEvent('filechooser');
  await page.getByRole('button', { name: 'Attach files' }).click();
  await (await chooser).setFiles({ name: 'huge.bin', mimeType: 'application/octet-stream', buffer: Buffer.alloc(6 * 1024 * 1024) });
  await expect(page.getByTestId('message-error')).toContainText('huge.bin is 6');
  await expect(page.getByTestId('message-error')).toContainText('the limit is 5');
  await expect(page.getByTestId('attachment')).toHaveCount(0);

  // The workspace is full (the agent answers 507): the chip and the box say so; nothing is sent.
  await page.route('**/api/v1/agent/files/upload', (route) =>
    route.fulfill({
      status: 507,
      contentType: 'application/json',
      body: JSON.stringify({ code: 'QUOTA_EXCEEDED', detail: 'The workspace is full; delete files to make room' }),
    }),
  );
  const again = page.waitForEvent('filechooser');
  await page.getByRole('button', { name: 'Attach files' }).click();
  await (await again).setFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('notes\n') });
  await page.getByTestId('send').click();
  await expect(page.getByTestId('attachment')).toHaveAttribute('data-state', 'failed');
  await expect(page.getByTestId('attachment')).toContainText('Not uploaded');
  await expect(page.getByTestId('message-error')).toContainText('notes.txt could not be uploaded');
  await expect(composer(page)).toHaveValue('my words stay');
  await expect(users(page)).toHaveCount(0);

  // Removed, the message goes alone.
  await page.getByRole('button', { name: 'Remove notes.txt' }).click();
  await page.getByTestId('send').click();
  await expect(users(page)).toHaveText(['Youmy words stay']);
});

for (const size of [
  { name: 'phone', ...PHONE },
  { name: 'desktop', ...DESKTOP },
]) {
  test(`${size.name}: long messages and replies fold behind Show more`, async ({ page }) => {
    await start(page, `collapse-${size.name}`, size);
    const long = `${'supercalifragilistic '.repeat(950)}${'x'.repeat(20_000 - 21 * 950)}`;
    await send(page, long);
    await expect(replies(page).last()).toContainText('Received 20000 characters.');
    const mine = users(page).last();
    const more = mine.getByRole('button', { name: 'Show more' });
    await expect(more).toHaveAttribute('aria-expanded', 'false');
    // Folded: not a 14,000 px bubble on a phone.
    expect((await mine.boundingBox())!.height).toBeLessThan(600);
    await more.click();
    const less = mine.getByRole('button', { name: 'Show less' });
    await expect(less).toHaveAttribute('aria-expanded', 'true');
    expect((await mine.boundingBox())!.height).toBeGreaterThan(1_200);
    await less.click();
    await expect(mine.getByRole('button', { name: 'Show more' })).toHaveAttribute('aria-expanded', 'false');
    expect((await mine.boundingBox())!.height).toBeLessThan(600);
    // The whole message is still there (copy and history are the full text).
    await expect(bodyText(mine)).toHaveText(long);

    // A long reply folds too; a short one has no toggle.
    await exchange(page, 'long reply', 'Paragraph 30');
    const reply = replies(page).last();
    await expect(reply.getByRole('button', { name: 'Show more' })).toBeVisible();
    expect((await reply.boundingBox())!.height).toBeLessThan(600);
    await exchange(page, 'hello', 'How can I help?');
    await expect(replies(page).last().getByRole('button', { name: 'Show more' })).toHaveCount(0);
    expect(await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)).toBe(0);
  });
}

test('a subagent’s result is a Markdown card in the chat that started it, not a box above every page', async ({ page }) => {
  await start(page, 'subagent');
  await exchange(page, 'start a list helper', 'A list helper is on it.');
  // The layout collects pending messages every 10 s.
  const card = transcript(page).locator('[data-role="subagent"]');
  await expect(card).toHaveCount(1, { timeout: 30_000 });
  await expect(card.locator('summary')).toHaveText('Subagent “fruit picker” completed');
  await expect(card.locator('.body strong')).toHaveText('apple');
  await expect(card.locator('.body li')).toHaveText(['apple', 'pear', 'plum']);
  // The id is a detail, not the headline; the card folds.
  await expect(card.locator('.card-details')).toContainText(/Run [0-9a-f]{12}/);
  await card.locator('summary').click();
  await expect(card.locator('.body')).toBeHidden();
  await card.locator('summary').press('Enter');
  await expect(card.locator('.body')).toBeVisible();
  await expect(page.getByRole('region', { name: 'Messages from your agent' })).toBeHidden();

  // Not on other pages, and not in another chat; back in its chat after a reload.
  await page.getByRole('link', { name: 'Files' }).click();
  await expect(page.getByTestId('file-tree')).toBeVisible();
  await expect(page.getByText('fruit picker')).toHaveCount(0);
  await page.getByRole('link', { name: 'Chat' }).click();
  await expect(transcript(page).locator('[data-role="subagent"]')).toHaveCount(1);
  await page.getByTestId('new-chat').click();
  await expect(transcript(page).locator('[data-role="subagent"]')).toHaveCount(0);
  await page
    .getByRole('navigation', { name: 'Chats' })
    .getByRole('button', { name: /start a list helper/ })
    .click();
  await expect(transcript(page).locator('[data-role="subagent"]')).toHaveCount(1);
  await page.reload();
  await expect(transcript(page).locator('[data-role="subagent"] summary')).toHaveText('Subagent “fruit picker” completed');

  // axe over the chat with every tool showing: the card, a folded message, an open edit, a chip.
  await exchange(page, 'long reply', 'Paragraph 30');
  await users(page).first().getByRole('button', { name: 'Edit this message' }).click();
  const chooser = page.waitForEvent('filechooser');
  await page.getByRole('button', { name: 'Attach files' }).click();
  await (await chooser).setFiles({ name: 'a-file-with-a-rather-long-name-for-a-phone.txt', mimeType: 'text/plain', buffer: Buffer.from('x\n') });
  await expect(page.getByTestId('attachment')).toHaveCount(1);
  await replies(page).last().getByRole('button', { name: 'Copy this reply' }).click();
  for (const size of [DESKTOP, PHONE]) {
    await page.setViewportSize(size);
    expect(await axeProblems(page, { include: ['[data-testid="transcript"]', 'form.composer'] }), `at ${size.width}`).toEqual([]);
    expect(await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth), `at ${size.width}`).toBe(0);
  }
});
