import { expect, test } from './support/test.js';
import { composer, signInAsGuest, transcript } from './support/guest.js';

/**
 * Sending and stopping in Chromium against the product and the scripted model
 * (e2e/support/model.ts): a 32,000-character message goes in a POST body, never in a URL, and
 * round-trips; one over the bound is refused inline before anything is sent; Stop ends the
 * reply on the server, keeps the chat, and history shows the partial reply as stopped.
 */
test('a 32,000-character message round-trips in a POST body; one over the limit is refused inline', async ({ page }) => {
  await signInAsGuest(page, `e2e-long-${Date.now()}`);
  const requests: Array<{ url: string; method: string; body: string }> = [];
  page.on('request', (request) => requests.push({ url: request.url(), method: request.method(), body: request.postData() ?? '' }));

  // One character over: an inline error, Send disabled, nothing leaves the page.
  const marker = 'LONGMSG';
  const over = `${marker}${'x'.repeat(32_001 - marker.length)}`;
  await composer(page).fill(over);
  await expect(page.getByTestId('message-error')).toHaveText('Your message is 32,001 characters; the limit is 32,000. Remove 1 to send it.');
  await expect(composer(page)).toHaveAttribute('aria-invalid', 'true');
  await expect(page.getByTestId('send')).toBeDisabled();
  await composer(page).press('Enter');
  await expect(transcript(page).locator('[data-role="user"]')).toHaveCount(0);
  expect(requests.filter((r) => r.body.includes(marker) || r.url.includes(marker))).toEqual([]);

  // At the bound: sent, answered, and the message was never part of a URL.
  const message = over.slice(0, 32_000);
  await composer(page).fill(message);
  await expect(page.getByTestId('message-error')).toBeHidden();
  await expect(composer(page)).toHaveAttribute('aria-invalid', 'false');
  await page.getByTestId('send').click();
  await expect(transcript(page).locator('[data-role="assistant"]').last()).toHaveText(/Received 32000 characters\./);
  expect(requests.filter((r) => r.url.includes(marker))).toEqual([]);
  expect(requests.filter((r) => r.body.includes(message)).map((r) => r.method)).toEqual(['POST']);
  await expect(composer(page)).toHaveValue('');

  // After a reload, history holds the whole message.
  await page.reload();
  await expect(transcript(page).locator('[data-role="user"]')).toHaveText(new RegExp(`^You${marker}x{${32_000 - marker.length}}$`));
});

test('Stop ends the reply on the server, keeps the chat, and history marks the reply stopped', async ({ page }) => {
  await signInAsGuest(page, `e2e-stop-${Date.now()}`);
  await composer(page).fill('hello');
  await page.getByTestId('send').click();
  await expect(transcript(page).locator('[data-role="assistant"]').last()).toHaveText(/How can I help\?/);

  // A long reply (a chunk every 250 ms, 24 in all): stop it after a few chunks.
  await composer(page).fill('slow story');
  await page.getByTestId('send').click();
  const reply = transcript(page).locator('[data-role="assistant"]').last();
  await expect(reply).toContainText('chunk2');
  await page.getByTestId('stop').click();
  await expect(transcript(page).locator('[data-role="stopped"]')).toHaveText('Reply stopped.');
  await expect(page.getByTestId('stop')).toBeHidden();
  await expect(page.getByTestId('chat-status')).toHaveText('');
  await expect(reply).toHaveAttribute('data-stopped', 'true');
  await expect(reply).not.toContainText('chunk23');

  // The chat is kept, and the server's history says the same after a reload: the partial reply,
  // then the stopped marker; no run is active any more.
  await page.reload();
  await expect(transcript(page).locator('[data-role="user"]')).toHaveText(['Youhello', 'Youslow story']);
  const stopped = transcript(page).locator('[data-role="stopped"]');
  await expect(stopped).toHaveText('Reply stopped.');
  const partial = transcript(page).locator('[data-role="assistant"]').last();
  await expect(partial).toContainText('chunk2');
  await expect(partial).not.toContainText('chunk23');
  await expect(partial).toHaveAttribute('data-stopped', 'true');
  await expect(partial.locator('.cut')).toHaveCount(0);
  await expect(page.getByTestId('stop')).toBeHidden();
  await expect(page.getByTestId('chat-status')).not.toHaveText('The agent is replying…');

  // Escape in the composer stops too. Wait for the new reply itself: the stopped one above also
  // holds chunk1, and Escape before the new run streams has nothing to stop.
  await composer(page).fill('slow again');
  await page.getByTestId('send').click();
  await expect(transcript(page).locator('li').last()).toHaveAttribute('data-role', 'assistant');
  await expect(transcript(page).locator('[data-role="assistant"]')).toHaveCount(3);
  await expect(transcript(page).locator('[data-role="assistant"]').last()).toContainText('chunk1');
  await expect(page.getByTestId('stop')).toBeVisible();
  await composer(page).press('Escape');
  await expect(transcript(page).locator('[data-role="stopped"]')).toHaveCount(2);

  // Clearing is separate and asks first; Cancel keeps everything.
  await page.getByTestId('chat-menu').click();
  await page.getByTestId('clear-chat').click();
  const confirm = page.getByTestId('clear-confirm');
  await expect(confirm).toBeVisible();
  await confirm.getByRole('button', { name: 'Cancel' }).click();
  await expect(confirm).toBeHidden();
  await expect(transcript(page).locator('[data-role="user"]')).toHaveCount(3);
  await page.getByTestId('chat-menu').click();
  await page.getByTestId('clear-chat').click();
  await confirm.getByRole('button', { name: 'Clear' }).click();
  await expect(transcript(page).locator('li')).toHaveCount(0);
  await page.reload();
  await expect(page.getByTestId('chat-status')).toHaveText('');
  await expect(transcript(page).locator('li')).toHaveCount(0);
});
