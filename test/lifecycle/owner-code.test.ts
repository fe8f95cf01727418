/**
 * Owner pairing on the agent (real HTTP: an agent polling the fake Bot API): only an unexpired
 * code pairs, once; other `/start` payloads, expired codes and codes in groups pair nobody.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ownerCodeHash, setOwnerCode } from '../../server/agent/messenger/owner-code.js';
import { PAIRED_NOTICE, PENDING_NOTICE } from '../../server/agent/messenger/service.js';
import { startTelegramRig, until, type TelegramRig } from '../messenger/helpers.js';

let rig: TelegramRig;
beforeAll(async () => {
  rig = await startTelegramRig({ TELEGRAM_GROUPS: 'on' });
});
afterAll(async () => {
  await rig?.stop();
});

const status = async (id: number) => {
  const { body } = await rig.json<{ contacts: Array<{ telegram_id: string; status: string }> }>('GET', '/messenger/contacts');
  return body.contacts.find((c) => c.telegram_id === String(id))?.status;
};

it('an expired code pairs nobody', async () => {
  const mallory = { id: 3001, first_name: 'Mallory' };
  await setOwnerCode(rig.agent.services.store.db, ownerCodeHash('expired-code-0001'), new Date(Date.now() - 1_000));
  rig.fake.userSays(mallory, '/start expired-code-0001');
  await until(() => rig.fake.textsTo(mallory.id).length > 0, 10_000);
  expect(rig.fake.textsTo(mallory.id)).toEqual([PENDING_NOTICE]);
  expect(await status(mallory.id)).toBe('pending');
});

it('a code sent in a group pairs nobody; the same code then works once in private', async () => {
  const trent = { id: 3002, first_name: 'Trent' };
  await setOwnerCode(rig.agent.services.store.db, ownerCodeHash('fresh-code-00001'), new Date(Date.now() + 60_000));
  rig.fake.userSays(trent, '/start fresh-code-00001', { id: -500, type: 'group', title: 'g' });
  await until(async () => (await status(trent.id)) === 'pending', 10_000);
  rig.fake.userSays(trent, '/start fresh-code-00001');
  await until(() => rig.fake.textsTo(trent.id).includes(PAIRED_NOTICE), 10_000);
  expect(await status(trent.id)).toBe('allowed');
  // Replacing the code: the old one is gone.
  await setOwnerCode(rig.agent.services.store.db, ownerCodeHash('second-code-0001'), new Date(Date.now() + 60_000));
  const eve = { id: 3003, first_name: 'Eve' };
  rig.fake.userSays(eve, '/start fresh-code-00001');
  await until(() => rig.fake.textsTo(eve.id).length > 0, 10_000);
  expect(await status(eve.id)).toBe('pending');
});
