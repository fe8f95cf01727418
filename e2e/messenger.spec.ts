import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { expect, test } from './support/test.js';

/**
 * The Messenger page with the fake Bot API (e2e/support/telegram.ts): a full account (e-mail
 * sign-in) sees the BotFather steps, a refused token is explained, the right one connects, an
 * owner code comes with its t.me link, and Disconnect brings the form back.
 */
const outbox = path.resolve('test-results/e2e-data/outbox');
const TOKEN = '123456:TEST-token_fake';

async function codeFor(address: string): Promise<string> {
  for (let i = 0; i < 50; i++) {
    for (const file of (await readdir(outbox).catch(() => [] as string[])).filter((f) => f.endsWith('.json'))) {
      const entry = JSON.parse(await readFile(path.join(outbox, file), 'utf8')) as { to: string; text: string };
      const code = entry.to === address ? /\b(\d{6})\b/.exec(entry.text)?.[1] : undefined;
      if (code) return code;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no mail to ${address}`);
}

test('a full account connects its own bot, gets an owner code and disconnects', async ({ page }) => {
  const address = `bot-${Date.now()}@example.com`;
  await page.goto('/');
  const email = page.getByRole('region', { name: 'E-mail' });
  await email.getByLabel('E-mail address').fill(address);
  await email.getByRole('button', { name: 'Send me a sign-in code' }).click();
  await email.getByLabel('6-digit code').fill(await codeFor(address));
  await email.getByRole('button', { name: 'Sign in', exact: true }).click();
  await expect(page.getByTestId('signed-in')).toBeVisible();

  await page.getByRole('link', { name: 'Messenger' }).click();
  const status = page.getByTestId('messenger-status');
  await expect(status).toContainText('/newbot');
  await page.getByLabel('Bot token').fill('123456:not-the-right-token');
  await page.getByRole('button', { name: 'Connect' }).click();
  await expect(page.getByRole('alert')).toContainText('Telegram refused this bot token');

  await page.getByLabel('Bot token').fill(TOKEN);
  await page.getByRole('button', { name: 'Connect' }).click();
  await expect(status).toContainText('Connected as Fake Agent (@fake_agent_bot)');

  await page.getByRole('button', { name: 'Get an owner code' }).click();
  const link = page.getByTestId('owner-code').getByRole('link');
  await expect(link).toHaveAttribute('href', /^https:\/\/t\.me\/fake_agent_bot\?start=[\w-]{16}$/);
  await expect(page.getByTestId('owner-code')).toContainText('/start ');

  page.once('dialog', (dialog) => void dialog.accept());
  await page.getByRole('button', { name: 'Disconnect' }).click();
  await expect(status).toContainText('/newbot');
});
