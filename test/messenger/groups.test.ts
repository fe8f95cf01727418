/** TELEGRAM_GROUPS=on: allowed senders talk to the agent from a group, as chat telegram:<group id>. */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { lastUserText } from '../support/scripted-model.js';
import { alice, carol, sleep, startTelegramRig, until, type TelegramRig } from './helpers.js';

const group = { id: -5001, type: 'group' as const, title: 'friends' };
let rig: TelegramRig;
beforeAll(async () => {
  rig = await startTelegramRig({ TELEGRAM_GROUPS: 'on' });
  await rig.agent.services.store.db.contact.create({ data: { telegramId: String(alice.id), username: 'alice', displayName: 'Alice', status: 'allowed' } });
});
afterAll(() => rig.stop());

it('an allowed sender in a group gets the reply in the group', async () => {
  rig.model.queue({ text: 'hi all' });
  rig.fake.userSays(alice, 'hello bot', group);
  await until(() => rig.fake.textsTo(group.id).length === 1);
  expect(rig.fake.textsTo(group.id)).toEqual(['hi all']);
  expect(lastUserText(rig.model.requests.at(-1)!)).toBe('hello bot');
  const history = await rig.json<{ messages: unknown[] }>('GET', `/chat/${encodeURIComponent(`telegram:${group.id}`)}/history`);
  expect(history.body.messages).toHaveLength(2);
});

it('an unknown sender in a group becomes pending, without a notice in the group', async () => {
  const requests = rig.model.requests.length;
  rig.fake.userSays(carol, 'who is this bot?', group);
  await until(() => rig.fake.unconfirmed() === 0);
  await sleep(150);
  expect(rig.fake.textsTo(group.id)).toHaveLength(1);
  expect(rig.model.requests.length).toBe(requests);
  expect((await rig.json('GET', '/messenger/contacts?status=pending')).body).toMatchObject({ contacts: [{ telegram_id: String(carol.id) }] });
});
