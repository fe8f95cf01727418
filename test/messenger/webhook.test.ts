/** Webhook mode: setWebhook at start, updates pushed to POST /telegram/webhook with the secret header. */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort, startTestAgent } from '../support/servers.js';
import { PENDING_NOTICE } from '../../server/agent/messenger/service.js';
import { alice, bob, startTelegramRig, until, type TelegramRig } from './helpers.js';

const SECRET = 'webhook-secret-0123456789';
let rig: TelegramRig;
let url: string;

beforeAll(async () => {
  const port = await freePort();
  url = `http://127.0.0.1:${port}/telegram/webhook`;
  rig = await startTelegramRig({ AGENT_PORT: String(port), TELEGRAM_WEBHOOK_URL: url, TELEGRAM_WEBHOOK_SECRET: SECRET });
  await rig.agent.services.store.db.contact.create({ data: { telegramId: String(alice.id), username: 'alice', displayName: 'Alice', status: 'allowed' } });
});
afterAll(() => rig.stop());

it('registers the webhook with its secret and does not poll', () => {
  expect(rig.fake.webhook()).toEqual({ url, secret: SECRET });
  expect(rig.fake.callsOf('getUpdates')).toHaveLength(0);
});

it('pushed updates are handled like polled ones', async () => {
  rig.model.queue({ text: 'via webhook' });
  const id = rig.fake.userSays(alice, 'hello');
  await until(() => rig.fake.textsTo(alice.id).includes('via webhook'));
  expect(rig.fake.pushes.find((p) => p.update_id === id)?.status).toBe(200);
  rig.fake.userSays(bob, 'hi');
  await until(() => rig.fake.textsTo(bob.id).length === 1);
  expect(rig.fake.textsTo(bob.id)).toEqual([PENDING_NOTICE]);
});

it('refuses calls without the secret, and bodies that are not updates', async () => {
  const post = (headers: Record<string, string>, body: unknown) =>
    fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const update = {
    update_id: 1,
    message: { message_id: 1, date: 0, chat: { id: alice.id, type: 'private' }, from: { id: alice.id, is_bot: false, first_name: 'A' }, text: 'x' },
  };
  expect((await post({}, update)).status).toBe(401);
  expect((await post({ 'x-telegram-bot-api-secret-token': 'wrong' }, update)).status).toBe(401);
  const res = await post({ authorization: rig.agent.auth.authorization }, update);
  expect(res.status).toBe(401);
  expect(await res.json()).toMatchObject({ code: 'INVALID_WEBHOOK_SECRET' });
  expect((await post({ 'x-telegram-bot-api-secret-token': SECRET }, { hello: 'world' })).status).toBe(400);
});

it('without webhook mode the path answers 404', async () => {
  const agent = await startTestAgent();
  try {
    const res = await fetch(`${agent.url}/telegram/webhook`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(res.status).toBe(404);
  } finally {
    await agent.stop();
  }
});
