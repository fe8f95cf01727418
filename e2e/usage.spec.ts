import type { Page } from '@playwright/test';
import { expect, test } from './support/test.js';
import { composer, send, signInAsGuest, transcript } from './support/guest.js';
import { clearOfMidnightUtc } from '../test/support/clock.js';

/**
 * What a guest may still use today, in Chromium against the product and the scripted model: the
 * header counts down the day's 50 messages and shows the model-token budget; once either is
 * spent the composer is disabled and says why, before anything is typed.
 */
const signedIn = (page: Page) => page.getByTestId('signed-in');
const budget = (page: Page) => page.getByTestId('model-budget');

// The day's figures are filled and read back: no test straddles midnight UTC.
test.beforeEach(() => clearOfMidnightUtc(30_000));

test('the header counts down messages and model tokens; a spent budget disables the composer with the reason', async ({ page }) => {
  await signInAsGuest(page, `e2e-budget-${Date.now()}`);
  await expect(signedIn(page)).toHaveText('Signed in as a guest · 50 of 50 messages left today');
  // A guest's default budget (MODEL_DAILY_TOKENS_GUEST) is 200,000 tokens a day.
  await expect(budget(page)).toHaveText('200K of 200K model tokens left today');

  await send(page, 'hello');
  await expect(transcript(page).locator('[data-role="assistant"]').last()).toHaveText(/How can I help\?/);
  // The header follows the reply without a reload.
  await expect(signedIn(page)).toHaveText('Signed in as a guest · 49 of 50 messages left today');
  // The scripted model reports 10 tokens in and one out per chunk: the exact figure is in the title.
  await expect(budget(page)).toHaveAttribute('title', /^199,98\d of 200,000 model tokens left today; resets at \d{1,2}:\d\d/);

  // One answer that reports 300,000 tokens spends the rest of the day's budget.
  await send(page, 'spend the budget');
  await expect(transcript(page).locator('[data-role="assistant"]').last()).toHaveText(/That was expensive\./);
  await page.reload();
  await expect(budget(page)).toHaveText(/^Model budget used up for today · resets at \d{1,2}:\d\d( [AP]M)?$/);
  await expect(page.getByTestId('message-error')).toContainText("Your agent has used today's model budget.");
  await expect(page.getByTestId('send')).toBeDisabled();
  await composer(page).fill('one more');
  await composer(page).press('Enter');
  await expect(transcript(page).locator('[data-role="user"]')).toHaveCount(2);
  await expect(composer(page)).toHaveValue('one more');
});

test("a guest who sent today's 50 messages sees 0 left and a disabled composer that says why", async ({ page }) => {
  await signInAsGuest(page, `e2e-quota-${Date.now()}`);
  await expect(signedIn(page)).toHaveText('Signed in as a guest · 50 of 50 messages left today');
  await expect(page.getByTestId('send')).toBeEnabled({ timeout: 20_000 });
  // The 50 messages through the API (POST /chat, each reply read to its end): the 51st is refused.
  const statuses = await page.evaluate(async () => {
    const { access_token: token } = JSON.parse(localStorage.getItem('agent.tokens') ?? '{}') as { access_token: string };
    const got: number[] = [];
    for (let i = 0; i < 51; i++) {
      const res = await fetch('/api/v1/agent/chat', {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ message: `message ${i}`, chat_id: 'quota' }),
      });
      got.push(res.status);
      // Read to its end (the reply is short): a stream cut from this side frees its slot only once
      // the service has noticed, and 32 unnoticed ones would meet AGENT_STREAMS_PER_USER.
      await res.text();
    }
    return got;
  });
  expect(statuses).toEqual([...Array<number>(50).fill(200), 429]);

  await page.reload();
  await expect(signedIn(page)).toHaveText('Signed in as a guest · 0 of 50 messages left today');
  await expect(page.getByTestId('message-error')).toHaveText(
    "You have sent today's 50 guest messages. Link a sign-in method on the Account page to keep chatting, or come back tomorrow.",
  );
  await expect(page.getByTestId('send')).toBeDisabled();
});

test("the Account page splits today's model tokens by source: the user's chats and what the agent did on its own", async ({ page }) => {
  await signInAsGuest(page, `e2e-sources-${Date.now()}`);
  await send(page, 'hello');
  await expect(transcript(page).locator('[data-role="assistant"]').last()).toHaveText(/How can I help\?/);
  // A scheduled task due in two seconds: its turn is the agent's own, counted under "task".
  const { access_token: token } = JSON.parse((await page.evaluate(() => localStorage.getItem('agent.tokens'))) ?? '{}') as { access_token: string };
  const auth = { authorization: `Bearer ${token}` };
  const at = new Date(Date.now() + 2_000).toISOString();
  expect((await page.request.post('/api/v1/agent/tasks', { headers: auth, data: { prompt: 'Say hello', at } })).status()).toBe(201);
  type Tokens = { used: number; by_source: Record<'chat' | 'heartbeat' | 'task' | 'subagent', number> };
  const tokens = async () =>
    ((await (await page.request.get('/api/v1/account', { headers: auth })).json()) as { usage: { model_tokens: Tokens } }).usage.model_tokens;
  await expect.poll(async () => (await tokens()).by_source.task, { timeout: 30_000 }).toBeGreaterThan(0);
  const figures = await tokens();

  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Account' }).click();
  const usage = page.getByRole('region', { name: 'Usage today' });
  const exact = (n: number) => n.toLocaleString('en');
  await expect(usage.getByTestId('usage-total')).toHaveText(`${exact(figures.used)} of 200,000 model tokens used today.`);
  await expect(usage.getByTestId('usage-chat')).toHaveText(`Chats: ${exact(figures.by_source.chat)}`);
  await expect(usage.getByTestId('usage-task')).toHaveText(`Scheduled tasks: ${exact(figures.by_source.task)}`);
  await expect(usage.getByTestId('usage-heartbeat')).toHaveText('Heartbeats: 0');
  await expect(usage.getByTestId('usage-subagent')).toHaveText('Subagents: 0');
  expect(figures.by_source.chat).toBeGreaterThan(0);
  expect(figures.by_source.chat + figures.by_source.task).toBe(figures.used);
});
