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
    // Time-ordered ids (server/account/ids.ts), for user, identity and session alike.
    const v7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
    const identity = await db.identity.findUniqueOrThrow({ where: { provider_subject: { provider: 'guest', subject: 'domain-device' } } });
    for (const id of [a.userId, a.sessionId, b.sessionId, identity.id]) expect(id).toMatch(v7);
    // Rows Prisma makes (the other sign-in methods) get them from the schema's default.
    const made = await db.user.create({ data: { tier: 'guest' } });
    expect(made.id).toMatch(v7);
    await db.user.delete({ where: { id: made.id } });
    const session = await db.session.findUniqueOrThrow({ where: { id: a.sessionId } });
    expect(session.expiresAt.getTime() - Date.now()).toBeGreaterThan(29 * 24 * 3600 * 1000);
  });

  it('writes user.created for a new guest exactly while an endpoint wants it, whichever statement runs first', async () => {
    const { db, sql } = account.services.store;
    const device = (name: string) => testDeviceId(`${name}-${randomBytes(4).toString('hex')}`);
    const events = async (userId: string) => {
      const [row] = await db.$queryRaw<Array<{ events: number; deliveries: number }>>`
        SELECT (SELECT count(*)::int FROM webhook_events WHERE type = 'user.created' AND data->>'user_id' = ${userId}) AS events,
               (SELECT count(*)::int FROM webhook_deliveries AS d JOIN webhook_events AS e ON e.id = d.event_id WHERE e.data->>'user_id' = ${userId}) AS deliveries`;
      return row;
    };
    const before = await signInGuest(sql, device('unhooked'));
    expect(before.created).toBe(true);
    expect(await events(before.userId)).toEqual({ events: 0, deliveries: 0 });
    // Refused at delivery (a private address without WEBHOOK_ALLOW_PRIVATE): the rows are what counts here.
    const endpoint = await db.webhookEndpoint.create({ data: { url: 'http://127.0.0.1:9/hook', eventTypes: ['user.created'], secretSealed: 'unused' } });
    try {
      // The first new guest after the endpoint appeared, then one more once the service has seen it.
      for (const name of ['first-hooked', 'hooked']) {
        const guest = await signInGuest(sql, device(name));
        expect(guest.created).toBe(true);
        expect(await events(guest.userId)).toEqual({ events: 1, deliveries: 1 });
      }
      // A returning device: its own guest, stamped active, and no second user.created.
      const returning = device('returning');
      const first = await signInGuest(sql, returning);
      await db.user.update({ where: { id: first.userId }, data: { lastActiveAt: new Date('2026-01-01T00:00:00Z') } });
      const again = await signInGuest(sql, returning);
      expect(again).toMatchObject({ userId: first.userId, created: false });
      expect(await events(first.userId)).toEqual({ events: 1, deliveries: 1 });
      expect((await db.user.findUniqueOrThrow({ where: { id: first.userId } })).lastActiveAt.getTime()).toBeGreaterThan(Date.now() - 60_000);
      await db.webhookEndpoint.update({ where: { id: endpoint.id }, data: { enabled: false } });
      for (const name of ['disabled', 'after-disabled']) {
        const guest = await signInGuest(sql, device(name));
        expect(guest.created).toBe(true);
        expect(await events(guest.userId)).toEqual({ events: 0, deliveries: 0 });
      }
    } finally {
      await db.webhookEndpoint.delete({ where: { id: endpoint.id } });
    }
  });

  it('a returning device while no endpoint is hooked: its own guest, stamped active, no new account', async () => {
    const { db, sql } = account.services.store;
    const returning = testDeviceId(`back-${randomBytes(4).toString('hex')}`);
    const first = await signInGuest(sql, returning);
    await db.user.update({ where: { id: first.userId }, data: { lastActiveAt: new Date('2026-01-01T00:00:00Z') } });
    const usersBefore = await db.user.count();
    const again = await signInGuest(sql, returning);
    expect(again).toMatchObject({ userId: first.userId, created: false, guest: true });
    expect(again.sessionId).not.toBe(first.sessionId);
    expect(await db.user.count()).toBe(usersBefore);
    expect((await db.user.findUniqueOrThrow({ where: { id: first.userId } })).lastActiveAt.getTime()).toBeGreaterThan(Date.now() - 60_000);
  });
});
