/**
 * Webhooks over real HTTP (docs/admin.md, "Webhooks"): endpoints registered through the admin
 * API, events written by the changes themselves, and a receiver on loopback that verifies every
 * delivery with the `standardwebhooks` package. Retries, rotation, disabling after repeated
 * failure, resend, the delivery log, and the address guard at registration and at delivery.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_DELAYS_MS } from '../../server/account/admin/webhooks/worker.js';
import { bearer, uniqueEmail } from '../support/account-api.js';
import { adminApi, expectError, type Admin } from '../support/admin-api.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';
import { startWebhookReceiver, type Receipt, type WebhookReceiver } from '../support/webhook-receiver.js';

interface Endpoint {
  id: string;
  secret: string;
  enabled: boolean;
  disabled_reason: string | null;
}
interface Delivery {
  id: string;
  message_id: string;
  event_type: string;
  state: string;
  attempts: number;
  log: Array<{ status: number | null; latency_ms: number; response: string; error: string | null }>;
}

/** Same id ⇒ same body, and no one event (same body) under two ids. */
function expectNoEventUnderTwoIds(receipts: Receipt[]): void {
  const bodyById = new Map<string, string>();
  const idByBody = new Map<string, string>();
  for (const r of receipts) {
    expect(bodyById.get(r.id) ?? r.body).toBe(r.body);
    expect(idByBody.get(r.body) ?? r.id).toBe(r.id);
    bodyById.set(r.id, r.body);
    idByBody.set(r.body, r.id);
  }
}

describe('webhooks', () => {
  let account: TestAccount;
  let api: ReturnType<typeof adminApi>;
  let admin: Admin;
  let key: Record<string, string>;
  const receivers: WebhookReceiver[] = [];

  async function receiverWith(eventTypes: string[] = []): Promise<{ receiver: WebhookReceiver; endpoint: Endpoint }> {
    const receiver = await startWebhookReceiver();
    receivers.push(receiver);
    const endpoint = await api.json<Endpoint>(await api.post('/admin/webhooks', { url: receiver.url, event_types: eventTypes }, key), 200);
    receiver.secrets = [endpoint.secret];
    return { receiver, endpoint };
  }
  const deliveries = async (endpointId: string) =>
    (await api.json<{ deliveries: Delivery[] }>(await api.get(`/admin/webhooks/${endpointId}/deliveries`, key))).deliveries;

  beforeAll(async () => {
    account = await startTestAccount(
      'pglite',
      { WEBHOOK_ALLOW_PRIVATE: '1', WEBHOOK_POLL: '0.05', WEBHOOK_TIMEOUT: '2' },
      {
        configure: (config) => {
          // Retries within a test's patience; the default schedule's span is checked below.
          config.webhooks.retryDelaysMs = [300, 300, 300];
        },
      },
    );
    api = adminApi(account);
    admin = await api.newAdmin();
    key = (await api.newKey(admin, ['webhooks:write'])).headers;
  }, 120_000);
  afterAll(async () => {
    await Promise.all(receivers.map((r) => r.close()));
    await account?.stop();
  });

  it('a sign-up, its upgrade, a logout and a deletion each arrive once, signed and verified by standardwebhooks, with {type, timestamp, data.user_id}', async () => {
    const { receiver } = await receiverWith();
    const guest = await api.guest();
    const { user_id: userId } = await api.me(guest);
    const full = await api.email(uniqueEmail('upgrade'), bearer(guest));
    expect((await api.post('/auth/logout', { refresh_token: guest.refresh_token })).status).toBe(204);
    expect((await api.del('/account', bearer(full))).status).toBe(204);
    const expected = ['user.created', 'identity.linked', 'user.upgraded', 'session.revoked', 'user.deleted'];
    const mine = () => receiver.receipts.filter((r) => r.event.data.user_id === userId);
    await receiver.waitFor(() => expected.every((type) => mine().some((r) => r.event.type === type)), 20_000, expected.join(', '));
    expect(receiver.unverified).toEqual([]);
    for (const r of mine()) {
      expect(Object.keys(r.event)).toEqual(['type', 'timestamp', 'data']);
      expect(new Date(r.event.timestamp).toISOString()).toBe(r.event.timestamp);
      expect(r.id).toMatch(/^msg_[0-9a-f]{32}$/);
      expect(r.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    }
    expect(mine().find((r) => r.event.type === 'user.created')?.event.data).toMatchObject({ guest: true });
    expect(mine().find((r) => r.event.type === 'session.revoked')?.event.data).toMatchObject({ reason: 'logout', session_ids: [expect.any(String)] });
    expectNoEventUnderTwoIds(receiver.receipts);
    expect(new Set(mine().map((r) => r.id)).size).toBe(mine().length);
  });

  it('an endpoint gets only the event types it asked for', async () => {
    const { receiver } = await receiverWith(['user.deleted']);
    const pair = await api.email(uniqueEmail('filtered'));
    const { user_id: userId } = await api.me(pair);
    expect((await api.del('/account', bearer(pair))).status).toBe(204);
    await receiver.waitFor((rs) => rs.some((r) => r.event.data.user_id === userId), 20_000, 'user.deleted');
    expect(new Set(receiver.receipts.map((r) => r.event.type))).toEqual(new Set(['user.deleted']));
  });

  it('an event answered with 500 is retried with the same webhook-id until it is taken, and the delivery log shows each attempt', async () => {
    const { receiver, endpoint } = await receiverWith(['user.created']);
    let refused = false;
    receiver.answer = () => {
      if (refused) return 200;
      refused = true;
      return 500;
    };
    await api.guest();
    await receiver.waitFor((rs) => rs.length >= 2, 20_000, 'a retry');
    const [first, second] = receiver.receipts;
    expect(second!.id).toBe(first!.id);
    expect(second!.body).toBe(first!.body);
    expect(receiver.unverified).toEqual([]);
    let delivery: Delivery | undefined;
    for (const deadline = Date.now() + 10_000; delivery?.state !== 'delivered' && Date.now() < deadline; ) {
      [delivery] = await deliveries(endpoint.id);
    }
    expect(delivery).toMatchObject({ message_id: first!.id, event_type: 'user.created', state: 'delivered', attempts: 2 });
    expect(delivery!.log.map((a) => a.status)).toEqual([200, 500]);
    expect(delivery!.log[1]).toMatchObject({ response: 'refused with 500', error: 'the endpoint answered 500' });
    expect(delivery!.log[0]!.latency_ms).toBeGreaterThanOrEqual(0);

    // Resend: the same message again, by id.
    expect((await api.post(`/admin/webhooks/deliveries/${delivery!.id}/resend`, {}, key)).status).toBe(204);
    await receiver.waitFor((rs) => rs.length >= 3, 20_000, 'the resend');
    expect(receiver.receipts[2]!.id).toBe(first!.id);
    await expectError(await api.post('/admin/webhooks/deliveries/00000000-0000-4000-8000-000000000000/resend', {}, key), 404, 'WEBHOOK_DELIVERY_NOT_FOUND');
  });

  it('after a secret rotation, deliveries verify with the new secret and with the previous one', async () => {
    const { receiver, endpoint } = await receiverWith(['user.created']);
    const rotated = await api.json<Endpoint & { previous_secret_expires_at: string }>(
      await api.patch(`/admin/webhooks/${endpoint.id}`, { rotate_secret: true }, key),
    );
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(endpoint.secret);
    expect(rotated.previous_secret_expires_at).toBeTruthy();
    receiver.secrets = [rotated.secret, endpoint.secret];
    await api.guest();
    await receiver.waitFor((rs) => rs.length >= 1);
    expect(receiver.receipts[0]!.verifiedWith).toEqual([0, 1]);
    // Neither list nor read answers the secret again.
    expect(JSON.stringify(await api.json(await api.get('/admin/webhooks', key)))).not.toContain(rotated.secret);
  });

  it('an endpoint that fails through its whole retry schedule is disabled, and the audit log says so', async () => {
    const { receiver, endpoint } = await receiverWith(['user.created']);
    receiver.answer = () => 503;
    await api.guest();
    await receiver.waitFor((rs) => rs.length >= 4, 20_000, 'four attempts');
    let view: Endpoint | undefined;
    for (const deadline = Date.now() + 10_000; view?.enabled !== false && Date.now() < deadline; ) {
      view = (await api.json<{ endpoints: Endpoint[] }>(await api.get('/admin/webhooks', key))).endpoints.find((e) => e.id === endpoint.id);
    }
    expect(view).toMatchObject({ enabled: false, disabled_reason: expect.stringContaining('4 attempts') });
    const [delivery] = await deliveries(endpoint.id);
    expect(delivery).toMatchObject({ state: 'failed', attempts: 4 });
    const audit = await api.json<{ events: Array<{ action: string; target: { id: string }; actor: { type: string } }> }>(
      await api.get(`/admin/audit?action=webhook.disable&target_id=${endpoint.id}`, admin.headers),
    );
    expect(audit.events).toMatchObject([{ action: 'webhook.disable', target: { id: endpoint.id }, actor: { type: 'system' } }]);
    // Disabled: no more attempts, and a resend is refused until it is enabled again.
    await expectError(await api.post(`/admin/webhooks/deliveries/${delivery!.id}/resend`, {}, key), 409, 'WEBHOOK_DISABLED');
    receiver.answer = () => 200;
    expect((await api.patch(`/admin/webhooks/${endpoint.id}`, { enabled: true }, key)).status).toBe(200);
    expect((await api.post(`/admin/webhooks/deliveries/${delivery!.id}/resend`, {}, key)).status).toBe(204);
    await receiver.waitFor((rs) => rs.length >= 5, 20_000, 'the resend after enabling');
  });

  it('every change to an endpoint is in the audit log, without its secret', async () => {
    const { endpoint } = await receiverWith();
    expect((await api.patch(`/admin/webhooks/${endpoint.id}`, { description: 'billing' }, key)).status).toBe(200);
    expect((await api.del(`/admin/webhooks/${endpoint.id}`, key)).status).toBe(204);
    await expectError(await api.del(`/admin/webhooks/${endpoint.id}`, key), 404, 'WEBHOOK_NOT_FOUND');
    const audit = await api.json<{ events: Array<{ action: string }> }>(await api.get(`/admin/audit?target_id=${endpoint.id}`, admin.headers));
    expect(audit.events.map((e) => e.action)).toEqual(['webhook.delete', 'webhook.update', 'webhook.create']);
    expect(JSON.stringify(audit)).not.toContain(endpoint.secret);
  });

  it('refuses a normal user, a guest and an API key without webhooks:write', async () => {
    const user = await api.email(uniqueEmail('plain'));
    await expectError(await api.get('/admin/webhooks', bearer(user)), 403, 'FORBIDDEN');
    await expectError(await api.post('/admin/webhooks', { url: 'https://example.com/hook' }, bearer(await api.guest())), 403, 'FORBIDDEN');
    const reader = await api.newKey(admin, ['users:read', 'audit:read']);
    await expectError(await api.post('/admin/webhooks', { url: 'https://example.com/hook' }, reader.headers), 403, 'FORBIDDEN');
    await expectError(await api.get('/admin/webhooks', reader.headers), 403, 'FORBIDDEN');
  });
});

describe('the default retry schedule', () => {
  it('retries for more than 24 hours, backing off exponentially', () => {
    const total = DEFAULT_RETRY_DELAYS_MS.reduce((sum, delay) => sum + delay, 0);
    expect(total).toBeGreaterThan(24 * 3600_000);
    for (let i = 1; i < DEFAULT_RETRY_DELAYS_MS.length; i++) expect(DEFAULT_RETRY_DELAYS_MS[i]!).toBeGreaterThanOrEqual(DEFAULT_RETRY_DELAYS_MS[i - 1]!);
  });
});

describe('webhook endpoints on non-public addresses (WEBHOOK_ALLOW_PRIVATE unset)', () => {
  let account: TestAccount;
  let api: ReturnType<typeof adminApi>;
  let key: Record<string, string>;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    account = await startTestAccount('pglite', { WEBHOOK_POLL: '0.05' });
    api = adminApi(account);
    key = (await api.newKey(await api.newAdmin(), ['webhooks:write'])).headers;
    receiver = await startWebhookReceiver();
  }, 120_000);
  afterAll(async () => {
    await receiver?.close();
    await account?.stop();
  });

  it('SSRF: registering loopback, private, link-local (cloud metadata), mapped-IPv6 or a name resolving to loopback is refused', async () => {
    for (const url of [
      receiver.url,
      'http://localhost:9/hook',
      'http://10.1.2.3/hook',
      'http://172.16.0.1/hook',
      'http://192.168.1.1/hook',
      'http://169.254.169.254/latest/meta-data/',
      'http://100.64.0.1/hook',
      'http://[::1]/hook',
      'http://[::ffff:127.0.0.1]/hook',
      'http://[::ffff:7f00:1]/hook',
      'http://[fd00::1]/hook',
      'http://[fe80::1]/hook',
      'http://0.0.0.0/hook',
      'http://2130706433/hook',
      'ftp://example.com/hook',
      'http://user:pass@example.com/hook',
    ]) {
      const res = await api.post('/admin/webhooks', { url }, key);
      await expectError(res, 400, 'WEBHOOK_URL_FORBIDDEN');
    }
    for (const url of ['http://127.0.0.1/hook', 'http://10.0.0.1/x']) {
      const [endpoint] = (await api.json<{ endpoints: Array<{ id: string }> }>(await api.get('/admin/webhooks', key))).endpoints;
      if (endpoint) await expectError(await api.patch(`/admin/webhooks/${endpoint.id}`, { url }, key), 400, 'WEBHOOK_URL_FORBIDDEN');
    }
  });

  it('DNS rebinding: an endpoint whose name resolves to loopback at delivery time gets nothing, and the log says why', async () => {
    // As if `localhost` had resolved to a public address when it was registered: the row as registration leaves it.
    const endpoint = await account.services.store.db.webhookEndpoint.create({
      data: {
        url: receiver.url.replace('127.0.0.1', 'localhost'),
        eventTypes: ['user.created'],
        secretSealed: account.services.webhooks.box.seal('whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA='),
      },
    });
    await api.guest();
    let attempt: Delivery['log'][number] | undefined;
    for (const deadline = Date.now() + 20_000; !attempt && Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) {
      [attempt] = (await api.json<{ deliveries: Delivery[] }>(await api.get(`/admin/webhooks/${endpoint.id}/deliveries`, key))).deliveries[0]?.log ?? [];
    }
    expect(attempt).toMatchObject({ status: null, error: expect.stringContaining('not a public address') });
    expect(receiver.receipts).toEqual([]);
  });
});
