/**
 * Webhook URLs in IPv6 forms that carry a refused IPv4 address (fourth security review, Low):
 * registration accepted `http://[::127.0.0.1]` (which URL parsing turns into `[::7f00:1]`),
 * `[::ffff:0:7f00:1]`, `[64:ff9b:1::7f00:1]` (NAT64, local use) and `[2002:7f00:1::]` (6to4), so
 * deliveries could be aimed at the service's own loopback. Now every embedded-IPv4 form — IPv4-
 * compatible, mapped, translated, NAT64 well-known and local-use, 6to4, Teredo — is judged by the
 * IPv4 address it carries (server/common/addresses.ts, the classifier the webhook guard uses), at registration (real
 * HTTP to the admin API) and at connect (an endpoint stored without the check gets no connection:
 * the delivery log says why). The same forms of a public address stay allowed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPublicAddress } from '../../server/common/addresses.js';
import { adminApi, expectError } from '../support/admin-api.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';

/** Loopback (127.0.0.1), the metadata address (169.254.169.254) and a private one (10.0.0.1) in each IPv6 form. */
const REFUSED = [
  'http://[::127.0.0.1]/hook',
  'http://[::7f00:1]/hook',
  'http://[::ffff:0:7f00:1]/hook',
  'http://[::ffff:0:127.0.0.1]/hook',
  'http://[64:ff9b::7f00:1]/hook',
  'http://[64:ff9b::a9fe:a9fe]/hook',
  'http://[64:ff9b:1::7f00:1]/hook',
  'http://[64:ff9b:1:7f00:1::]/hook',
  'http://[2002:7f00:1::]/hook',
  'http://[2002:a9fe:a9fe::1]/hook',
  'http://[2002:a00:1::]/hook',
  'http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/hook',
  'http://[::ffff:a9fe:a9fe]/hook',
];

describe('webhook URLs with an IPv4 address inside IPv6', () => {
  let account: TestAccount;
  let api: ReturnType<typeof adminApi>;
  let key: Record<string, string>;

  beforeAll(async () => {
    account = await startTestAccount('pglite', { WEBHOOK_POLL: '0.05' });
    api = adminApi(account);
    key = (await api.newKey(await api.newAdmin(), ['webhooks:write'])).headers;
  });
  afterAll(() => account?.stop());

  it('are refused at registration when the IPv4 address is: 400 WEBHOOK_URL_FORBIDDEN', async () => {
    for (const url of REFUSED) await expectError(await api.post('/admin/webhooks', { url }, key), 400, 'WEBHOOK_URL_FORBIDDEN');
    expect(await account.services.store.db.webhookEndpoint.count()).toBe(0);
  });

  it('are refused at connect: an endpoint stored without the check gets no connection, and the log says why', async () => {
    const endpoint = await account.services.store.db.webhookEndpoint.create({
      data: {
        url: 'http://[::7f00:1]:9/hook',
        eventTypes: ['user.created'],
        secretSealed: account.services.webhooks.box.seal('whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA='),
      },
    });
    await api.guest();
    let attempt: { status: number | null; error: string | null } | undefined;
    for (const deadline = Date.now() + 20_000; !attempt && Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) {
      const { deliveries } = await api.json<{ deliveries: Array<{ log: Array<{ status: number | null; error: string | null }> }> }>(
        await api.get(`/admin/webhooks/${endpoint.id}/deliveries`, key),
      );
      [attempt] = deliveries[0]?.log ?? [];
    }
    expect(attempt).toMatchObject({ status: null, error: expect.stringContaining('not a public address') });
  });

  it('the same forms of a public address pass: the guard judges the address carried, not the spelling', () => {
    for (const address of ['::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1', '2606:4700::1111']) expect(isPublicAddress(address), address).toBe(true);
  });
});
