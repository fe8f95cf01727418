/**
 * A ban holds against everything that wakes an agent without its user asking (fourth security
 * review, Low): the wake scheduler, an operator's `agents:write` restart and a bot's update must
 * never start a banned user's agent, and the ban's clearing of `next_wake_at` must last — the
 * agent the ban stops reports its next heartbeat as it goes, which used to schedule it again.
 * Also: the scheduler woke only `kind = 'local'` agents, so a suspended Kubernetes agent's
 * heartbeat never came; it wakes the agents of whichever provisioner sleeps them. Real account
 * service and store; the scheduler's and the bot relay's targets record what they are asked to wake.
 */
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SecretBox } from '../../server/account/agents/secrets.js';
import { WakeScheduler } from '../../server/account/agents/provisioners/wake-scheduler.js';
import type { LocalProvisioner } from '../../server/account/agents/provisioners/local/provisioner.js';
import { MessengerBots } from '../../server/account/messenger/bots.js';
import { adminApi, expectError } from '../support/admin-api.js';
import { startTestAccount, type TestAccount } from '../support/servers.js';

const silent = pino({ level: 'silent' });

describe('bans hold against wakes', () => {
  let account: TestAccount;
  let api: ReturnType<typeof adminApi>;

  beforeAll(async () => {
    account = await startTestAccount('pglite', { AGENT_PROVISIONER: 'local', AGENT_IDLE_TIMEOUT: '0' });
    api = adminApi(account);
  });
  afterAll(() => account?.stop());

  /** A user with a registered agent of `kind` whose heartbeat is due. */
  async function dueAgent(kind: string, banned: boolean): Promise<{ userId: string; agentId: string }> {
    const db = account.services.store.db;
    const user = await db.user.create({ data: { tier: 'full', ...(banned ? { bannedAt: new Date(), banReason: 'test' } : {}) } });
    const agent = await account.services.agents.registry.add({
      name: `wake-${randomBytes(4).toString('hex')}`,
      url: 'http://127.0.0.1:0',
      secret: 'x'.repeat(32),
      kind,
      userId: user.id,
    });
    await db.agent.update({ where: { id: agent.id }, data: { nextWakeAt: new Date(Date.now() - 1_000) } });
    return { userId: user.id, agentId: agent.id };
  }

  it('the wake scheduler wakes the due agents of its own provisioner, kubernetes as well as local, and never a banned user’s', async () => {
    const woken: string[] = [];
    const target = { wake: async (userId: string) => void woken.push(userId) };
    const localDue = await dueAgent('local', false);
    const localBanned = await dueAgent('local', true);
    const kubeDue = await dueAgent('kubernetes', false);
    const kubeBanned = await dueAgent('kubernetes', true);
    await new WakeScheduler(account.services.store.db, target, silent, { pollMs: 1_000, kind: 'local' }).tick();
    await new WakeScheduler(account.services.store.db, target, silent, { pollMs: 1_000, kind: 'kubernetes' }).tick();
    expect(woken).toContain(localDue.userId);
    expect(woken).toContain(kubeDue.userId);
    expect(woken).not.toContain(localBanned.userId);
    expect(woken).not.toContain(kubeBanned.userId);
  });

  it('a ban clears next_wake_at for good: the report of the agent it stops does not schedule it again', async () => {
    const admin = await api.newAdmin('ban-wake');
    const { userId, agentId } = await dueAgent('local', false);
    expect((await api.post(`/admin/users/${userId}/ban`, { reason: 'abuse' }, admin.headers)).status).toBe(204);
    const registry = account.services.agents.registry;
    expect(await registry.nextWake(agentId)).toBeNull();
    // What the stopping agent's lifecycle report does (provisioners' setNextWake).
    await registry.setNextWake(agentId, new Date(Date.now() + 60_000));
    expect(await registry.nextWake(agentId)).toBeNull();
    // Unbanned, its reports count again.
    expect((await api.post(`/admin/users/${userId}/unban`, {}, admin.headers)).status).toBe(204);
    await registry.setNextWake(agentId, new Date(Date.now() + 60_000));
    expect(await registry.nextWake(agentId)).toBeInstanceOf(Date);
  });

  it("an admin's restart of a banned user's agent is 403 USER_BANNED and starts nothing", async () => {
    const admin = await api.newAdmin('restart');
    const guest = await api.guest();
    const { user_id } = await api.me(guest);
    // Their agent runs (any call through the proxy starts it).
    expect((await api.get('/agent/chats', { authorization: `Bearer ${guest.access_token}` })).status).toBe(200);
    const provisioner = account.services.agents.provisioner as LocalProvisioner;
    const agentId = (await account.services.agents.registry.forUser(user_id))?.id;
    expect(provisioner.processes().some((p) => p.agentId === agentId)).toBe(true);
    expect((await api.post(`/admin/users/${user_id}/ban`, { reason: 'abuse' }, admin.headers)).status).toBe(204);
    expect(provisioner.processes().some((p) => p.agentId === agentId)).toBe(false);
    await expectError(await api.post(`/admin/agents/${user_id}/restart`, {}, admin.headers), 403, 'USER_BANNED');
    expect(provisioner.processes().some((p) => p.agentId === agentId)).toBe(false);
  });

  it("a bot's update for a banned user wakes nothing: 403 USER_BANNED before the agent is asked for", async () => {
    const box = new SecretBox(randomBytes(32));
    const asked: string[] = [];
    const agents = {
      agentFor: async (userId: string) => {
        asked.push(userId);
        throw new Error('the agent was asked for');
      },
      restart: async () => {},
    };
    const bots = new MessengerBots(account.services.store.db, box, agents, silent, { telegramApiRoot: 'http://127.0.0.1:9', webhookBase: 'http://x' });
    const db = account.services.store.db;
    const user = await db.user.create({ data: { tier: 'full', bannedAt: new Date(), banReason: 'spam' } });
    const webhookSecret = randomBytes(16).toString('hex');
    const webhookId = randomBytes(16).toString('hex');
    // The webhook a ban removes, still in place (Telegram retrying an update, a removal that failed).
    await db.messengerBot.create({
      data: {
        userId: user.id,
        tokenEncrypted: box.seal('123:bot'),
        botUsername: 'b',
        botName: 'b',
        webhookId,
        webhookSecretEncrypted: box.seal(webhookSecret),
        webhook: true,
      },
    });
    await expect(bots.relay(webhookId, webhookSecret, { update_id: 1 })).rejects.toMatchObject({ appCode: 'USER_BANNED' });
    expect(asked).toEqual([]);
  });
});
