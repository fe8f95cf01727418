/**
 * Guest retention (server/account/users/retention.ts): guests idle for GUEST_RETENTION_DAYS are
 * removed with sessions, agent and workspace by a sweep that runs on one instance at a time;
 * active guests and full accounts stay. The clock is moved by passing `now` to the sweep.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenPair } from '@contracts/account/tokens.js';
import { GUEST_SWEEP_LOCK } from '../../server/account/users/retention.js';
import { postgresReachable } from '../support/postgres.js';
import { startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';

const DAY = 24 * 60 * 60 * 1000;
const kinds = (await postgresReachable()) ? (['pglite', 'postgres'] as const) : (['pglite'] as const);

describe.each(kinds)('guest retention on %s', (kind) => {
  let model: ScriptedModel;
  let account: TestAccount;
  let api: string;

  beforeAll(async () => {
    model = await startScriptedModel({ responder: () => ({ text: 'ok' }) });
    account = await startTestAccount(kind, { AGENT_PROVISIONER: 'local', AGENT_IDLE_TIMEOUT: '0', MODEL: model.modelSpec, GUEST_RETENTION_DAYS: '30' });
    api = `${account.url}/api/v1`;
  });
  afterAll(async () => {
    await account?.stop();
    await model?.close();
  });

  const signIn = async (deviceId = randomUUID()) => {
    const pair = (await (
      await fetch(`${api}/auth/guest`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ device_id: deviceId }) })
    ).json()) as TokenPair;
    const me = (await (await fetch(`${api}/auth/me`, { headers: { authorization: `Bearer ${pair.access_token}` } })).json()) as { user_id: string };
    return { token: pair.access_token, userId: me.user_id };
  };
  /** Everything about a user's activity moved `days` into the past. */
  const age = async (userId: string, days: number) => {
    const then = new Date(Date.now() - days * DAY);
    await account.services.store.db.user.update({ where: { id: userId }, data: { createdAt: then } });
    await account.services.store.db.session.updateMany({ where: { userId }, data: { createdAt: then, rotatedAt: then, lastUsedAt: then } });
  };
  const chat = async (token: string) =>
    (
      await fetch(`${api}/agent/chat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ message: 'hi', chat_id: 'c1' }),
      })
    ).text();

  it('removes an abandoned guest with sessions, agent and workspace; keeps active guests and full accounts', async () => {
    const gone = await signIn();
    expect(await chat(gone.token)).toContain('"type":"done"');
    const agent = await account.services.agents.registry.forUser(gone.userId);
    const workspace = path.join(account.dataDir, 'agents', agent!.id, 'workspace');
    expect(existsSync(workspace)).toBe(true);
    await age(gone.userId, 40);

    const active = await signIn();
    const returning = await signIn();
    await age(returning.userId, 40);
    // An old guest whose session was used yesterday is not abandoned.
    const back = await account.services.store.db.session.findFirst({ where: { userId: returning.userId } });
    await account.services.store.db.session.update({ where: { id: back!.id }, data: { lastUsedAt: new Date(Date.now() - DAY) } });

    const full = await signIn();
    await account.services.store.db.user.update({ where: { id: full.userId }, data: { tier: 'full' } });
    await age(full.userId, 400);

    expect(await account.services.guestRetention!.sweep()).toBe(1);
    const { db } = account.services.store;
    expect(await db.user.findUnique({ where: { id: gone.userId } })).toBeNull();
    expect(await db.session.count({ where: { userId: gone.userId } })).toBe(0);
    expect(await account.services.agents.registry.forUser(gone.userId)).toBeUndefined();
    expect(existsSync(workspace)).toBe(false);
    expect((await fetch(`${api}/auth/me`, { headers: { authorization: `Bearer ${gone.token}` } })).status).toBe(401);
    for (const kept of [active, returning, full]) expect(await db.user.findUnique({ where: { id: kept.userId } })).not.toBeNull();

    // A month on, the guest active today is abandoned too; the full account never is.
    expect(await account.services.guestRetention!.sweep(new Date(Date.now() + 31 * DAY))).toBeGreaterThanOrEqual(2);
    expect(await db.user.findUnique({ where: { id: active.userId } })).toBeNull();
    expect(await db.user.findUnique({ where: { id: full.userId } })).not.toBeNull();
  });

  it.runIf(kind === 'postgres')('runs on one instance at a time: a sweep while another holds the lock removes nothing', async () => {
    const idle = await signIn();
    await age(idle.userId, 40);
    let inner = -1;
    const held = await account.services.store.exclusively(GUEST_SWEEP_LOCK, async () => {
      inner = await account.services.guestRetention!.sweep();
    });
    expect(held).toBe(true);
    expect(inner).toBe(0);
    expect(await account.services.store.db.user.findUnique({ where: { id: idle.userId } })).not.toBeNull();
    expect(await account.services.guestRetention!.sweep()).toBe(1);
  });
});
