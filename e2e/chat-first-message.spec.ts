import { expect, test } from '@playwright/test';

/**
 * The first minute (against the product and the scripted model, e2e/support/model.ts): typing
 * never waits for the agent. "Continue as guest", then at once a message and Enter: the message is
 * not dropped while the agent starts (it waits, said so beside the box, and goes as soon as the
 * chat has loaded) and its reply streams into the transcript.
 */
test('a message typed and sent right after "Continue as guest" is sent and answered, never dropped', async ({ page }) => {
  await page.addInitScript((id) => {
    if (!localStorage.getItem('agent.device_id')) localStorage.setItem('agent.device_id', id);
  }, `e2e-first-${Date.now()}`);
  await page.goto('/');
  await page.getByRole('button', { name: 'Continue as guest' }).click();
  const composer = page.getByLabel('Message', { exact: true });
  // No wait for the agent: the box takes the message as soon as it is on the page.
  await composer.fill('hello');
  await composer.press('Enter');
  const transcript = page.getByTestId('transcript');
  await expect(transcript.locator('[data-role="user"]')).toHaveText(/hello/);
  await expect(transcript.locator('[data-role="assistant"]').last()).toHaveText(/How can I help\?/);
  await expect(page.getByTestId('queued')).toHaveText('');
  await expect(composer).toHaveValue('');
});
