import { expect, test } from '@playwright/test';
import { claimedAgents, signalAgent } from './support/agents.js';
import { ownClient, send, signInAsGuest, transcript } from './support/guest.js';

/**
 * Connection states in Chromium against the product and the scripted model: an agent that hangs
 * mid-reply (SIGSTOP: its connections stay open and carry nothing, not even keepalives) is
 * reported within 5 s; once it runs again (SIGCONT) the page resumes the reply after the last
 * event it had, and the reply completes with no chunk lost or shown twice.
 */
test('a hung agent is reported within 5 s; when it runs again the reply resumes and completes', async ({ page }) => {
  await ownClient(page);
  const before = new Set(claimedAgents().keys());
  await signInAsGuest(page, `e2e-stall-${Date.now()}`);
  await send(page, 'hello');
  await expect(transcript(page).locator('[data-role="assistant"]').last()).toHaveText(/How can I help\?/);
  const mine = [...claimedAgents().keys()].filter((agent) => !before.has(agent));
  expect(mine).toHaveLength(1);
  const agent = mine[0]!;

  // A reply of 24 chunks, one every 250 ms: hang the agent a few chunks in.
  await send(page, 'slow story');
  const reply = transcript(page).locator('[data-role="assistant"]').nth(1);
  await expect(reply).toContainText('chunk2');
  const connection = page.getByTestId('connection');
  signalAgent(agent, 'SIGSTOP');
  try {
    await expect(connection).toContainText('Connection to your agent lost', { timeout: 5_000 });
  } finally {
    signalAgent(agent, 'SIGCONT');
  }
  await expect(reply).toContainText('chunk23', { timeout: 20_000 });
  await expect(connection).toBeHidden();
  await expect(page.getByTestId('stop')).toBeHidden();
  const text = (await reply.textContent()) ?? '';
  expect(text.match(/chunk\d+/g)).toEqual(Array.from({ length: 24 }, (_, i) => `chunk${i}`));
  await expect(transcript(page).locator('[data-role="cut-off"]')).toHaveCount(0);
});
