/**
 * The product's local outbox (no SMTP_URL: each message is also written as
 * DATA_DIR/outbox/<id>.json; DATA_DIR is set by playwright.config.ts): the newest sign-in code
 * and link sent to an address, and the sign-in page's e-mail form that asks for them.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Page } from '@playwright/test';

const outbox = path.resolve('test-results/e2e-data/outbox');

/** `after`: a code already used, so an older message is not mistaken for the one on its way. */
export async function mailTo(address: string, after?: string): Promise<{ code: string; link: string }> {
  for (let i = 0; i < 50; i++) {
    const files = (await readdir(outbox).catch(() => [] as string[]))
      .filter((f) => f.endsWith('.json'))
      .sort()
      .reverse();
    for (const file of files) {
      const entry = JSON.parse(await readFile(path.join(outbox, file), 'utf8')) as { to: string; text: string };
      if (entry.to !== address) continue;
      const code = /\b(\d{6})\b/.exec(entry.text)?.[1];
      const link = /(https?:\/\/\S+\/auth\/verify\?token=[A-Za-z0-9_-]+)/.exec(entry.text)?.[1];
      if (code === after) break;
      if (code && link) return { code, link };
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no mail to ${address}`);
}

/** Signs in with the mailed code from the sign-in page; `previousCode`: the code of an earlier sign-in to the same address. */
export async function signInByEmail(page: Page, address: string, previousCode?: string): Promise<string> {
  const section = page.getByRole('region', { name: 'E-mail' });
  await section.getByLabel('E-mail address').fill(address);
  await section.getByRole('button', { name: 'Send me a sign-in code' }).click();
  const { code } = await mailTo(address, previousCode);
  await section.getByLabel('6-digit code').fill(code);
  await section.getByRole('button', { name: 'Sign in' }).click();
  return code;
}
