/**
 * The product's local outbox (no SMTP_URL: each message is also written as
 * DATA_DIR/outbox/<id>.json; DATA_DIR is set by playwright.config.ts): the newest sign-in code
 * and link sent to an address.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

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
