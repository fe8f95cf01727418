import type { Page } from '@playwright/test';
import { expect, test } from './support/test.js';
import { axeProblems } from './support/axe.js';
import { send, signInAsGuest, transcript } from './support/guest.js';

/**
 * The Memory page at a phone's and a desktop's width: a guest's MEMORY.md (written through the
 * proxy, as the agent's flush would) is shown, edited and saved, then deleted after the inline
 * question; USER.md is created from the page; the page fits without sideways scrolling and axe
 * finds nothing serious. And a long chat in the transcript: past the model's window (four
 * messages of 30,000 characters against the scripted model's 32k tokens) the older messages become
 * one "Earlier messages summarised" entry that expands to the originals.
 */
async function accessToken(page: Page): Promise<string> {
  return (JSON.parse((await page.evaluate(() => localStorage.getItem('agent.tokens'))) ?? '{}') as { access_token: string }).access_token;
}

for (const width of [375, 1280]) {
  test(`shows, edits and deletes the memory files at ${width} px`, async ({ page }) => {
    test.setTimeout(120_000);
    await page.setViewportSize({ width, height: 800 });
    await signInAsGuest(page, `memory-${width}-${Date.now()}`);
    const auth = { authorization: `Bearer ${await accessToken(page)}` };
    const seeded = await page.request.patch('/api/v1/agent/memory/MEMORY.md', { headers: auth, data: { content: '- likes green tea\n' }, timeout: 30_000 });
    expect(seeded.status()).toBe(200);

    await page.getByRole('link', { name: 'Memory' }).click();
    const memory = page.getByLabel('Contents of MEMORY.md');
    await expect(memory).toHaveValue('- likes green tea\n', { timeout: 20_000 });
    const user = page.getByLabel('Contents of USER.md');
    await expect(user).toHaveValue('');
    await expect(page.getByTestId('memory-user-md-status')).toHaveText('No file yet: saving creates it.');
    expect(await axeProblems(page), `memory page at ${width} px`).toEqual([]);
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);

    await memory.fill('- likes black coffee\n');
    const memorySection = page.locator('section[data-file="MEMORY.md"]');
    await memorySection.getByRole('button', { name: 'Save' }).click();
    await expect(page.getByTestId('memory-memory-md-status')).toContainText('Saved.');
    await user.fill('Name: Ada\n');
    await page.locator('section[data-file="USER.md"]').getByRole('button', { name: 'Save' }).click();
    await expect(page.getByTestId('memory-user-md-status')).toContainText('Saved.');
    const files = async () =>
      (
        (await (await page.request.get('/api/v1/agent/memory', { headers: auth })).json()) as {
          files: Array<{ name: string; exists: boolean; content: string }>;
        }
      ).files;
    expect((await files()).map((f) => [f.name, f.content])).toEqual([
      ['MEMORY.md', '- likes black coffee\n'],
      ['USER.md', 'Name: Ada\n'],
    ]);

    await memorySection.getByRole('button', { name: 'Delete', exact: true }).click();
    // Asked first: Cancel keeps the file.
    await memorySection.getByRole('button', { name: 'Cancel' }).click();
    expect((await files())[0]!.exists).toBe(true);
    await memorySection.getByRole('button', { name: 'Delete', exact: true }).click();
    await memorySection.getByRole('button', { name: 'Delete MEMORY.md' }).click();
    await expect(page.getByTestId('memory-memory-md-status')).toHaveText('Deleted MEMORY.md.');
    await expect(memory).toHaveValue('');
    expect((await files())[0]!.exists).toBe(false);
    await page.reload();
    await expect(page.getByLabel('Contents of USER.md')).toHaveValue('Name: Ada\n', { timeout: 20_000 });
    await expect(page.getByLabel('Contents of MEMORY.md')).toHaveValue('');
  });
}

test('a long chat shows its older messages as one summarised entry that expands to them', async ({ page }) => {
  test.setTimeout(180_000);
  await page.setViewportSize({ width: 1280, height: 800 });
  await signInAsGuest(page, `memory-compaction-${Date.now()}`);
  const long = (n: number) => `Part ${n}. ${'The quick brown fox jumps over the lazy dog. '.repeat(660)}`.slice(0, 30_000);
  for (let n = 1; n <= 4; n++) {
    await send(page, long(n));
    // The scripted model counts what arrived (a message over 1,000 characters).
    await expect(transcript(page).locator('[data-role="assistant"]')).toHaveCount(n, { timeout: 60_000 });
  }
  await page.reload();
  const entry = transcript(page).getByTestId('compaction');
  await expect(entry).toBeVisible({ timeout: 20_000 });
  await expect(entry.locator('summary')).toContainText('Earlier messages summarised');
  await expect(entry.getByText('Part 1.', { exact: false }).first()).toBeHidden();
  await entry.locator('summary').click();
  await expect(entry.getByText(/^Part 1\./).first()).toBeVisible();
  expect(await axeProblems(page)).toEqual([]);
});
