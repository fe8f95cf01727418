import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signInGuest } from '../../server/account/auth/guest/sign-in.js';
import { accountStoreKinds } from '../support/postgres.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';
import { testDeviceId } from '../support/devices.js';

const kinds = await accountStoreKinds();

describe.each(kinds)('guest sign-in fast path on %s', (kind) => {
  let account: TestAccount;
  beforeAll(async () => {
    account = await startTestAccount(kind);
  });
  afterAll(() => account.stop());

  it('12 concurrent first sign-ins of one device: one account, twelve sessions, no orphan users', async () => {
    const deviceId = testDeviceId(`race-${randomBytes(4).toString('hex')}`);
    const answers = await Promise.all(
      Array.from({ length: 12 }, () =>
        fetch(`${account.url}/api/v1/auth/guest`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ device_id: deviceId }),
        }),
      ),
    );
    expect(answers.map((r) => r.status)).toEqual(Array(12).fill(200));
    const db = account.services.store.db;
    const identity = await db.identity.findUniqueOrThrow({ where: { provider_subject: { provider: 'guest', subject: deviceId } } });
    expect(await db.session.count({ where: { userId: identity.userId } })).toBe(12);
    expect(await db.user.count({ where: { identities: { none: {} } } })).toBe(0);
  });

  it('the domain function: same device → same guest, new session each time', async () => {
    const db = account.services.store.db;
    const a = await signInGuest(account.services.store.sql, 'domain-device');
    const b = await signInGuest(account.services.store.sql, 'domain-device');
    expect(a).toMatchObject({ userId: b.userId, guest: true, generation: 0 });
    expect(a.sessionId).not.toBe(b.sessionId);
    const session = await db.session.findUniqueOrThrow({ where: { id: a.sessionId } });
    expect(session.expiresAt.getTime() - Date.now()).toBeGreaterThan(29 * 24 * 3600 * 1000);
  });
});
