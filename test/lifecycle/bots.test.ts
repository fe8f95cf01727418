/**
 * Every user's own bot (real HTTP: account service, local sandboxed agents whose Telegram calls
 * leave through the egress gateway, the fake Bot API, the scripted model).
 * - Long polling (no TELEGRAM_WEBHOOK_BASE): connect (guests 403, refused tokens 400), the token
 *   sealed at rest and never answered, owner pairing with a one-time code, a polling agent is not
 *   put to sleep and answers later messages, disconnect.
 * - Webhook mode: setWebhook under /api/v1/telegram/ with a secret, the agent sleeps, a message
 *   wakes it and is answered, a wrong secret is refused and nothing is delivered; deleting the
 *   account deletes the webhook.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalProvisioner } from '../../server/account/agents/provisioners/local/provisioner.js';
import { PAIRED_NOTICE, PENDING_NOTICE } from '../../server/agent/messenger/service.js';
import type { TokenPair } from '@contracts/account/tokens.js';
import { until } from '../chat/helpers.js';
import { testDeviceId } from '../support/devices.js';
import { startFakeTelegram, type FakeTelegram } from '../support/fake-telegram.js';
import { startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';
import { freePort, startTestAccount, type TestAccount } from '../support/servers.js';

const alice = { id: 2001, first_name: 'Alice', username: 'alice' };
const bob = { id: 2002, first_name: 'Bob', username: 'bob' };
const REPLY = 'hello from your agent';

let model: ScriptedModel;
beforeAll(async () => {
  model = await startScriptedModel({ responder: () => ({ text: REPLY }) });
});
afterAll(async () => {
  await model?.close();
});

interface Rig {
  account: TestAccount;
  fake: FakeTelegram;
  api: string;
  guest(label: string): Promise<string>;
  fullUser(label: string): Promise<string>;
  call(token: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> | undefined; text: string }>;
  processes(): number;
  stop(): Promise<void>;
}

async function startRig(env: Record<string, string> = {}): Promise<Rig> {
  const fake = await startFakeTelegram();
  const account = await startTestAccount('pglite', {
    AGENT_PROVISIONER: 'local',
    AGENT_IDLE_TIMEOUT: '1',
    AGENT_STOP_GRACE: '0.5',
    MODEL: model.modelSpec,
    TELEGRAM_API_ROOT: fake.apiRoot,
    ...env,
  });
  const api = `${account.url}/api/v1`;
  const guest = async (label: string) => {
    const res = await fetch(`${api}/auth/guest`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ device_id: testDeviceId(label) }),
    });
    return ((await res.json()) as TokenPair).access_token;
  };
  return {
    account,
    fake,
    api,
    guest,
    // A guest flipped to a full account (sign-in methods are other suites' business).
    async fullUser(label) {
      const token = await guest(label);
      const me = (await (await fetch(`${api}/auth/me`, { headers: { authorization: `Bearer ${token}` } })).json()) as { user_id: string };
      await account.services.store.db.user.update({ where: { id: me.user_id }, data: { tier: 'full' } });
      return guest(label);
    },
    async call(token, method, path, body) {
      const res = await fetch(`${api}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        body: body !== undefined ? JSON.stringify(body) : undefined,
      });
      const text = await res.text();
      return { status: res.status, text, body: text ? (JSON.parse(text) as Record<string, unknown>) : undefined };
    },
    processes: () => (account.services.agents.provisioner as LocalProvisioner).processes().length,
    async stop() {
      await account.stop();
      await fake.close();
    },
  };
}

describe('a user connects their own bot (long polling)', () => {
  let rig: Rig;
  let owner: string;
  beforeAll(async () => {
    rig = await startRig();
    owner = await rig.fullUser('bot-owner');
  });
  afterAll(async () => {
    await rig?.stop();
  });

  it('refuses guests, malformed and refused tokens', async () => {
    const guest = await rig.guest('bot-guest');
    const asGuest = await rig.call(guest, 'PUT', '/agent/messenger/bot', { token: rig.fake.token });
    expect(asGuest).toMatchObject({ status: 403, body: { code: 'GUEST_LIMITED' } });
    expect(await rig.call(guest, 'POST', '/agent/messenger/bot/owner-code')).toMatchObject({ status: 403, body: { code: 'GUEST_LIMITED' } });
    expect((await rig.call(guest, 'DELETE', '/agent/messenger/bot')).status).toBe(403);

    const getMes = rig.fake.callsOf('getMe').length;
    // A token is put in a URL path: anything not shaped like one is refused before any call.
    for (const token of ['../../botX/getMe', '123:abc/def', '123456:abc?x=1', 'x'.repeat(20)]) {
      expect(await rig.call(owner, 'PUT', '/agent/messenger/bot', { token })).toMatchObject({ status: 400, body: { code: 'BOT_TOKEN_INVALID' } });
    }
    expect(rig.fake.callsOf('getMe')).toHaveLength(getMes);
    // Shaped right, refused by Telegram.
    expect(await rig.call(owner, 'PUT', '/agent/messenger/bot', { token: '123456:not-the-right-token' })).toMatchObject({
      status: 400,
      body: { code: 'BOT_TOKEN_INVALID' },
    });
    expect(rig.fake.callsOf('getMe').length).toBe(getMes + 1);
    expect(await rig.account.services.store.db.messengerBot.count()).toBe(0);
  });

  it('connects: getMe answers who the bot is; the token is sealed at rest and never answered', async () => {
    const res = await rig.call(owner, 'PUT', '/agent/messenger/bot', { token: rig.fake.token });
    expect(res).toMatchObject({ status: 200, body: { connected: true, bot_username: 'fake_agent_bot', bot_name: 'Fake Agent' } });
    expect(res.text).not.toContain(rig.fake.token);
    const row = await rig.account.services.store.db.messengerBot.findFirstOrThrow();
    expect(JSON.stringify(row)).not.toContain(rig.fake.token.split(':')[1]);
    // The agent polls for it.
    await until(async () => (await rig.call(owner, 'GET', '/agent/messenger/status')).body?.connected === true, 20_000);
    const status = await rig.call(owner, 'GET', '/agent/messenger/status');
    expect(status.text).not.toContain(rig.fake.token);
    expect(rig.fake.webhook()).toBeUndefined();
  });

  it('pairs the owner with a one-time code; a second use of the code pairs nobody', async () => {
    const issued = await rig.call(owner, 'POST', '/agent/messenger/bot/owner-code');
    expect(issued.status).toBe(200);
    const { code, expires_at } = issued.body as { code: string; expires_at: string };
    expect(code).toMatch(/^[\w-]{16}$/);
    const ttl = Date.parse(expires_at) - Date.now();
    expect(ttl).toBeGreaterThan(9 * 60_000);
    expect(ttl).toBeLessThanOrEqual(10 * 60_000);

    rig.fake.userSays(bob, '/start wrong-code-123');
    rig.fake.userSays(alice, `/start ${code}`);
    await until(() => rig.fake.textsTo(alice.id).includes(PAIRED_NOTICE), 15_000);
    rig.fake.userSays(bob, `/start ${code}`);
    await until(() => rig.fake.textsTo(bob.id).length > 0, 15_000);
    const contacts = (await rig.call(owner, 'GET', '/agent/messenger/contacts')).body as { contacts: Array<{ telegram_id: string; status: string }> };
    expect(contacts.contacts).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ telegram_id: String(alice.id), status: 'allowed' }),
        expect.objectContaining({ telegram_id: String(bob.id), status: 'pending' }),
      ]),
    );
    expect(rig.fake.textsTo(bob.id)).toEqual([PENDING_NOTICE]);
  });

  it('keeps a polling agent running past the idle timeout, and answers the owner later', async () => {
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(rig.processes()).toBe(1);
    rig.fake.userSays(alice, 'are you there?');
    await until(() => rig.fake.textsTo(alice.id).includes(REPLY), 15_000);
  });

  it('disconnects: 204, the agent lets the bot go, the token is forgotten', async () => {
    const res = await rig.call(owner, 'DELETE', '/agent/messenger/bot');
    expect(res.status).toBe(204);
    expect(await rig.account.services.store.db.messengerBot.count()).toBe(0);
    expect((await rig.call(owner, 'GET', '/agent/messenger/status')).body).toMatchObject({ connected: false });
    expect(await rig.call(owner, 'POST', '/agent/messenger/bot/owner-code')).toMatchObject({ status: 404, body: { code: 'BOT_NOT_CONNECTED' } });
  });
});

describe('webhook mode', () => {
  let rig: Rig;
  let owner: string;
  beforeAll(async () => {
    const port = await freePort();
    rig = await startRig({ PORT: String(port), TELEGRAM_WEBHOOK_BASE: `http://127.0.0.1:${port}` });
    owner = await rig.fullUser('hook-owner');
  });
  afterAll(async () => {
    await rig?.stop();
  });

  it('sets the webhook under /api/v1/telegram/ with a secret; a message wakes the sleeping agent and is answered', async () => {
    const res = await rig.call(owner, 'PUT', '/agent/messenger/bot', { token: rig.fake.token });
    expect(res).toMatchObject({ status: 200, body: { connected: true, bot_username: 'fake_agent_bot' } });
    const hook = rig.fake.webhook();
    expect(hook?.url).toMatch(new RegExp(`^${rig.account.url}/api/v1/telegram/[\\w-]{16,}/webhook$`));
    expect(hook?.url).not.toContain(rig.fake.token);
    expect(hook?.secret?.length).toBeGreaterThanOrEqual(16);

    const { code } = (await rig.call(owner, 'POST', '/agent/messenger/bot/owner-code')).body as { code: string };
    await until(() => rig.processes() === 0, 15_000);
    rig.fake.userSays(alice, `/start ${code}`);
    await until(() => rig.fake.textsTo(alice.id).includes(PAIRED_NOTICE), 20_000);
    expect(rig.fake.callsOf('getUpdates')).toHaveLength(0);

    await until(() => rig.processes() === 0, 15_000);
    rig.fake.userSays(alice, 'wake up');
    await until(() => rig.fake.textsTo(alice.id).includes(REPLY), 20_000);
    expect(rig.fake.pushes.every((p) => p.status === 200)).toBe(true);
  });

  it('refuses a wrong or missing secret with 401 and delivers nothing', async () => {
    const hook = rig.fake.webhook()!;
    const modelCalls = model.requests.length;
    const texts = rig.fake.textsTo(alice.id).length;
    const update = {
      update_id: 99_001,
      message: { message_id: 1, date: 0, from: { ...alice, is_bot: false }, chat: { id: alice.id, type: 'private' }, text: 'injected' },
    };
    const attempts: Array<Record<string, string>> = [
      { 'x-telegram-bot-api-secret-token': `${hook.secret}x` },
      { 'x-telegram-bot-api-secret-token': 'a'.repeat(43) },
      {},
    ];
    for (const headers of attempts) {
      const res = await fetch(hook.url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(update) });
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject({ code: 'INVALID_WEBHOOK_SECRET' });
    }
    const unknown = await fetch(hook.url.replace(/telegram\/[\w-]+\//, 'telegram/not-a-webhook-id-at-all/'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': hook.secret! },
      body: JSON.stringify(update),
    });
    expect(unknown.status).toBe(404);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(model.requests.length).toBe(modelCalls);
    expect(rig.fake.textsTo(alice.id)).toHaveLength(texts);
  });

  it('deleting the account removes its bot: the webhook is deleted and a push to the old address finds nothing', async () => {
    const leaving = await rig.fullUser('hook-leaving');
    expect((await rig.call(leaving, 'PUT', '/agent/messenger/bot', { token: rig.fake.token })).status).toBe(200);
    const hook = rig.fake.webhook()!;
    expect((await rig.call(leaving, 'DELETE', '/account')).status).toBe(204);
    expect(rig.fake.webhook()).toBeUndefined();
    const update = {
      update_id: 99_002,
      message: { message_id: 2, date: 0, from: { ...alice, is_bot: false }, chat: { id: alice.id, type: 'private' }, text: 'anyone there?' },
    };
    const res = await fetch(hook.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': hook.secret! },
      body: JSON.stringify(update),
    });
    expect(res.status).toBe(404);
  });
});
