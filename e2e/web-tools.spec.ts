import { expect, test } from './support/test.js';
import { send, signInAsGuest, transcript } from './support/guest.js';

/**
 * The agent reads the web, in Chromium against the product and the scripted model: asked about a
 * page, the agent calls `web_fetch` through the account service's egress gateway (the page is on
 * e2e/support/web.ts, which the product treats as public for this test only), the transcript shows
 * a card naming the page as a link, and the answer carries what the page said; asked to search, it
 * calls `web_search` (a fake SearXNG), the card names the query, and the answer names the first result.
 */
test('a page fetched and a search made show as cards, and the answers carry what came back', async ({ page }) => {
  await signInAsGuest(page, `e2e-web-${Date.now()}`);
  const webPort = Number(process.env.E2E_PORT_BASE ?? 3900) + 14;

  await send(page, 'read the tides page');
  const fetched = transcript(page).locator('[data-tool="web_fetch"]');
  await expect(fetched).toContainText('Read a web page');
  const link = fetched.getByRole('link', { name: `http://127.0.0.1:${webPort}/tides` });
  await expect(link).toHaveAttribute('href', `http://127.0.0.1:${webPort}/tides`);
  await expect(link).toHaveAttribute('rel', 'noopener noreferrer nofollow');
  await expect(transcript(page).locator('[data-role="assistant"]').last()).toContainText('The page says high water is at 06:12.');
  await expect(page.getByTestId('send')).toBeVisible();

  await send(page, 'search the web for tides at brest');
  const searched = transcript(page).locator('[data-tool="web_search"]');
  await expect(searched).toContainText('Searched the web');
  await expect(searched.locator('q')).toHaveText('tides at brest');
  await expect(transcript(page).locator('[data-role="assistant"]').last()).toContainText('The first result is “Brest tide times”.');

  // History renders the same cards.
  await page.reload();
  await expect(transcript(page).locator('[data-tool="web_fetch"] a')).toHaveText(`http://127.0.0.1:${webPort}/tides`);
  await expect(transcript(page).locator('[data-tool="web_search"] q')).toHaveText('tides at brest');
});
