import type { Page } from '@playwright/test';
import { expect, test } from './support/test.js';
import { signInAsGuest } from './support/guest.js';

/**
 * The Tasks page at a phone's and a desktop's width: a guest's tasks (made through the proxy, as
 * the agent's tool would) are listed with their next run in the browser's zone; pause clears the
 * next run, resume brings it back, delete removes the task; the page fits without sideways
 * scrolling, and the browser's zone is kept on the account.
 */
const ZONE = 'Asia/Tokyo';
test.use({ timezoneId: ZONE });

async function accessToken(page: Page): Promise<string> {
  return (JSON.parse((await page.evaluate(() => localStorage.getItem('agent.tokens'))) ?? '{}') as { access_token: string }).access_token;
}

for (const width of [375, 1280]) {
  test(`lists, pauses, resumes and deletes tasks at ${width} px`, async ({ page }) => {
    await page.setViewportSize({ width, height: 800 });
    await signInAsGuest(page, `tasks-${width}-${Date.now()}`);
    const auth = { authorization: `Bearer ${await accessToken(page)}` };
    const at = '2099-01-02T00:30:00+00:00';
    const once = await page.request.post('/api/v1/agent/tasks', { headers: auth, data: { prompt: 'Renew the passport', at }, timeout: 30_000 });
    expect(once.status()).toBe(201);
    const daily = await page.request.post('/api/v1/agent/tasks', { headers: auth, data: { prompt: 'Morning digest', cron: '0 8 * * *', timezone: ZONE } });
    expect(daily.status()).toBe(201);

    await page.getByRole('link', { name: 'Tasks' }).click();
    const list = page.getByTestId('tasks');
    const passport = list.getByRole('listitem').filter({ hasText: 'Renew the passport' });
    // 00:30 UTC is 09:30 in Tokyo, the browser's zone.
    await expect(passport.getByTestId('next-run')).toContainText('9:30');
    await expect(passport.getByTestId('next-run')).toContainText('2099');
    await expect(page.getByText(`your time zone, ${ZONE}`)).toBeVisible();

    const digest = list.getByRole('listitem').filter({ hasText: 'Morning digest' });
    await digest.getByRole('button', { name: 'Pause: Morning digest' }).click();
    await expect(digest.getByTestId('next-run')).toHaveText('Paused');
    await digest.getByRole('button', { name: 'Resume: Morning digest' }).click();
    await expect(digest.getByTestId('next-run')).toContainText('8:00');

    await passport.getByRole('button', { name: 'Delete: Renew the passport' }).click();
    await expect(list.getByRole('listitem')).toHaveCount(1);
    // Icons are inline SVG: nothing is fetched for them.
    await expect(digest.locator('svg.icon')).toHaveCount(2);
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);

    const account = await page.request.get('/api/v1/account', { headers: auth });
    expect(((await account.json()) as { timezone: string | null }).timezone).toBe(ZONE);
  });
}
