/**
 * The `test` every spec uses: Playwright's, with each test's browser context a client of its own
 * (`clientAddress`, sent as X-Forwarded-For, which playwright.config.ts has the service trust from
 * loopback). What the service allows per client (guest sign-ups, account reads, sign-in mails) is
 * then never spent by the specs before: from one shared 127.0.0.1 the chat specs left the next
 * spec's header without its day's budget, depending on how many calls fit in the minute.
 * A page of a context a test makes itself takes `ownClient` (support/guest.ts).
 */
import { test as base } from '@playwright/test';

export { expect } from '@playwright/test';

/** A random /64 of IPv6's documentation prefix (the service counts IPv6 per /64): no two tests meet in a bucket. */
export function clientAddress(): string {
  const hextet = () => Math.floor(Math.random() * 0x10000).toString(16);
  return `2001:db8:${hextet()}:${hextet()}::1`;
}

export const test = base.extend({
  context: async ({ context }, use) => {
    await context.setExtraHTTPHeaders({ 'x-forwarded-for': clientAddress() });
    await use(context);
  },
});
