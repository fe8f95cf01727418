import { expect, test } from './support/test.js';
import { ownClient } from './support/guest.js';
import { signInByEmail } from './support/outbox.js';
import { enrolAuthenticator } from './support/second-factor.js';

/**
 * The admin page in Chromium against the product: the operator (ADMIN_EMAILS in
 * playwright.config.ts, so an admin at sign-in) is refused until it turns on two-step verification
 * (ADMIN_REQUIRE_2FA, on by default), then finds a user, bans them (confirmed), the user's
 * next sign-in is refused, unbans them and the user signs in again; creates an API key; and adds a
 * webhook endpoint whose delivery log shows the next ban.
 */

test('an admin finds a user, bans them (their sign-in is refused), unbans them, creates a key and a webhook', async ({ browser }) => {
  // The longest scenario of the suite (four sign-ins, an enrolment, a dozen admin calls): 15 s
  // alone, and it runs second, while the Kubernetes suite beside it boots its control plane
  // (scripts/test.sh), which has made it take over the default 60 s.
  test.setTimeout(120_000);
  const suffix = Date.now().toString(36);
  const userAddress = `member-${suffix}@e2e.example`;
  const userContext = await browser.newContext();
  const user = await userContext.newPage();
  // Contexts made here: each a client of its own too (support/test.ts).
  await ownClient(user);
  await user.goto('/');
  let userCode = await signInByEmail(user, userAddress);
  await expect(user.getByTestId('signed-in')).toContainText('Signed in');

  const adminContext = await browser.newContext();
  const admin = await adminContext.newPage();
  await ownClient(admin);
  await admin.goto('/');
  await signInByEmail(admin, 'operator@e2e.example');
  await expect(admin.getByTestId('signed-in')).toContainText('Signed in');
  // The refusal makes the page refresh its tokens (api.ts, secondFactorRequired). Leaving the page
  // while that refresh is in flight loses the rotated pair: the server has moved on, the browser
  // keeps the spent token, and its next refresh is taken for a reuse, which signs it out (the
  // clean-clone CI saw the sign-in page here; docs/security.md, "Not covered"). Here the page is
  // left once it holds the new pair: the answer's arrival is not enough, the page stores it a
  // moment later (CI saw that moment lost too, and the sign-in page after the enrolment).
  const storedRefreshToken = () =>
    admin.evaluate(() => (JSON.parse(localStorage.getItem('agent.tokens') ?? 'null') as { refresh_token: string } | null)?.refresh_token);
  const spent = await storedRefreshToken();
  const refreshed = admin.waitForResponse((res) => new URL(res.url()).pathname === '/trpc/tokens.refresh');
  await admin.goto('/admin');
  await expect(admin.getByRole('alert').filter({ hasText: 'two-step verification' }).first()).toBeVisible();
  expect((await refreshed).status()).toBe(200);
  await expect.poll(storedRefreshToken).not.toBe(spent);
  expect(await storedRefreshToken()).toBeDefined();
  await admin.goto('/account');
  await enrolAuthenticator(admin);
  await admin.getByTestId('recovery-codes-saved').click();
  await admin.goto('/admin');
  // The page shows its sections once an admin call passes, or says why not.
  const users = admin.getByRole('region', { name: 'Users' });
  const refusal = admin.getByTestId('admin-page').getByRole('alert', { includeHidden: true }).first();
  await expect(users.or(refusal.filter({ hasText: /\S/ }))).toBeVisible({ timeout: 30_000 });
  expect(await refusal.textContent(), 'the admin page refused').toBe('');
  await users.getByLabel('Search users').fill(userAddress);
  await users.getByRole('button', { name: 'Search' }).click();
  await users.getByTestId('admin-users').getByRole('button', { name: userAddress }).click();
  await expect(admin.getByTestId('admin-user-state')).toHaveText('Active');
  // Today's model tokens by source (this user has not chatted: all nothing).
  await expect(admin.getByTestId('admin-user-sources')).toHaveText('Model tokens by source today: Chats 0 · Heartbeats 0 · Scheduled tasks 0 · Subagents 0');
  admin.once('dialog', (dialog) => void dialog.accept());
  await admin.getByLabel('Ban reason').fill('e2e');
  await admin.getByRole('button', { name: 'Ban' }).click();
  await expect(admin.getByTestId('admin-user-state')).toHaveText('Banned: e2e');

  // The banned user's next sign-in is refused.
  await userContext.clearCookies();
  await user.evaluate(() => localStorage.clear());
  await user.goto('/');
  userCode = await signInByEmail(user, userAddress, userCode);
  await expect(user.getByRole('region', { name: 'E-mail' }).getByRole('alert')).toContainText('banned');

  await admin.getByRole('button', { name: 'Unban' }).click();
  await expect(admin.getByTestId('admin-user-state')).toHaveText('Active');
  await user.goto('/');
  await signInByEmail(user, userAddress, userCode);
  await expect(user.getByTestId('signed-in')).toContainText('Signed in');

  const keys = admin.getByRole('region', { name: 'API keys' });
  await keys.getByLabel('Key name').fill(`backend-${suffix}`);
  await keys.getByRole('button', { name: 'Create key' }).click();
  await expect(keys.getByTestId('admin-new-key')).toContainText(/ak_[0-9a-f]{24}_/);
  await expect(keys.getByTestId('admin-keys')).toContainText(`backend-${suffix}`);

  // A webhook endpoint (on loopback: WEBHOOK_ALLOW_PRIVATE in playwright.config.ts) at a path the
  // service answers 404: its secret is shown once, and a second ban shows in its delivery log.
  const hooks = admin.getByRole('region', { name: 'Webhooks' });
  await hooks.getByLabel('Endpoint URL').fill(`${new URL(admin.url()).origin}/api/v1/e2e-receiver-${suffix}`);
  await hooks.getByRole('button', { name: 'Add endpoint' }).click();
  await expect(hooks.getByTestId('admin-new-secret')).toContainText(/whsec_/);
  admin.once('dialog', (dialog) => void dialog.accept());
  await admin.getByLabel('Ban reason').fill('e2e again');
  await admin.getByRole('button', { name: 'Ban' }).click();
  await expect(admin.getByTestId('admin-user-state')).toHaveText('Banned: e2e again');
  const endpoint = hooks
    .getByTestId('admin-webhooks')
    .getByRole('listitem')
    .filter({ hasText: `e2e-receiver-${suffix}` });
  const deliveries = endpoint.getByTestId('admin-deliveries');
  const toggle = endpoint.getByRole('button', { name: 'Deliveries' });
  // The log is read when opened: reopen it until the worker has tried the delivery.
  await expect(async () => {
    if (await deliveries.count()) await toggle.click();
    await toggle.click();
    await expect(deliveries).toContainText(/user\.banned · \w+ · [1-9]\d* attempt\(s\) · HTTP 404/, { timeout: 1_000 });
  }).toPass({ timeout: 30_000 });
  await userContext.close();
  await adminContext.close();
});
