/** The bot flow end to end: fake Bot API ⇄ agent ⇄ scripted model, over real HTTP. */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastUserText } from '../support/scripted-model.js';
import { PENDING_NOTICE } from '../../server/agent/messenger/service.js';
import { alice, bob, carol, sleep, startTelegramRig, until, type TelegramRig } from './helpers.js';

let rig: TelegramRig;
beforeAll(async () => {
  // Contacts may be sent files (TELEGRAM_CONTACT_TOOLS); their other tools are the security suite's (telegram-contacts).
  rig = await startTelegramRig({ TELEGRAM_OWNER_ID: '4242', TELEGRAM_CONTACT_TOOLS: 'send_file' });
});
afterAll(() => rig.stop());

describe('telegram bot', () => {
  it('status answers connected with the bot from getMe, under both prefixes', async () => {
    for (const prefix of ['/messenger', '/telegram']) {
      const { status, body } = await rig.json('GET', `${prefix}/status`);
      expect(status).toBe(200);
      expect(body).toEqual({ connected: true, bot_username: 'fake_agent_bot', bot_name: 'Fake Agent' });
    }
  });

  it('an unknown sender becomes pending and is told once; nothing reaches the model', async () => {
    rig.fake.userSays(alice, 'hi there');
    await until(() => rig.fake.textsTo(alice.id).length === 1);
    rig.fake.userSays(alice, 'hello?');
    rig.fake.userSays(alice, 'anyone?');
    await until(() => rig.fake.unconfirmed() === 0);
    await sleep(150);
    expect(rig.fake.textsTo(alice.id)).toEqual([PENDING_NOTICE]);
    expect(rig.model.requests).toHaveLength(0);
    const { body } = await rig.json('GET', '/messenger/contacts');
    expect(body).toEqual({ contacts: [{ telegram_id: '1001', username: 'alice', display_name: 'Alice Liddell', status: 'pending' }] });
  });

  it('allowed: the next message goes to the model as chat telegram:<id>, the reply comes back with typing', async () => {
    const patched = await rig.json('PATCH', '/telegram/contacts/1001', { status: 'allowed' });
    expect(patched).toEqual({ status: 200, body: { telegram_id: '1001', username: 'alice', display_name: 'Alice Liddell', status: 'allowed' } });
    rig.model.queue({ text: ['Hello ', 'Alice!'] });
    rig.fake.userSays(alice, 'what time is it?');
    await until(() => rig.fake.textsTo(alice.id).length === 2);
    expect(rig.fake.textsTo(alice.id)[1]).toBe('Hello Alice!');
    expect(lastUserText(rig.model.requests.at(-1)!)).toBe('what time is it?');
    expect(rig.fake.callsOf('sendChatAction', alice.id)[0]?.params.action).toBe('typing');
    // Same runtime and history as any chat.
    const history = await rig.json<{ messages: unknown[] }>('GET', `/chat/${encodeURIComponent('telegram:1001')}/history`);
    expect(history.body.messages).toEqual([
      { type: 'text', content: 'what time is it?', name: 'user', message_id: expect.any(String) },
      { type: 'text', content: 'Hello Alice!' },
    ]);
  });

  it("a long reply is split at Telegram's limit on paragraph boundaries", async () => {
    const paragraph = (n: number) => `${'word '.repeat(150).trim()} #${n}`; // ~760 characters
    const paragraphs = Array.from({ length: 14 }, (_, i) => paragraph(i));
    const long = paragraphs.join('\n\n');
    rig.model.queue({ text: long });
    const before = rig.fake.textsTo(alice.id).length;
    rig.fake.userSays(alice, 'tell me a lot');
    await until(() => rig.fake.textsTo(alice.id).length >= before + 3);
    await sleep(200);
    const pieces = rig.fake.textsTo(alice.id).slice(before);
    expect(pieces.length).toBe(3);
    for (const piece of pieces) expect(piece.length).toBeLessThanOrEqual(4096);
    expect(pieces.join('\n\n')).toBe(long);
    for (const piece of pieces) expect(piece).toMatch(/#\d+$/); // cut between paragraphs
  });

  it('a file event is sent as a document', async () => {
    await writeFile(path.join(rig.agent.workspace, 'report.txt'), 'the report body');
    rig.model.queue({ toolCalls: [{ name: 'send_file', args: { path: 'report.txt', caption: 'Your report' } }] }, { text: 'Sent.' });
    rig.fake.userSays(alice, 'send me the report');
    await until(() => rig.fake.callsOf('sendDocument', alice.id).length === 1);
    const doc = rig.fake.callsOf('sendDocument', alice.id)[0]!;
    expect(doc.file?.filename).toBe('report.txt');
    expect(doc.file?.bytes.toString()).toBe('the report body');
    expect(doc.params.caption).toBe('Your report');
    await until(() => rig.fake.textsTo(alice.id).at(-1) === 'Sent.');
  });

  it('blocked: ignored, the contact is kept', async () => {
    rig.fake.userSays(bob, 'hi');
    await until(() => rig.fake.textsTo(bob.id).length === 1);
    const blocked = await rig.json('PATCH', '/messenger/contacts/1002', { status: 'blocked' });
    expect(blocked.body).toMatchObject({ telegram_id: '1002', status: 'blocked' });
    const requests = rig.model.requests.length;
    rig.fake.userSays(bob, 'let me in');
    await until(() => rig.fake.unconfirmed() === 0);
    await sleep(150);
    expect(rig.fake.textsTo(bob.id)).toHaveLength(1);
    expect(rig.fake.callsOf('sendChatAction', bob.id)).toHaveLength(0);
    expect(rig.model.requests.length).toBe(requests);
    expect((await rig.json('GET', '/telegram/contacts?status=blocked')).body).toEqual({
      contacts: [{ telegram_id: '1002', username: 'bob', display_name: 'Bob', status: 'blocked' }],
    });
  });

  it('a burst of first messages from a stranger: one contact, one notice', async () => {
    const dave = { id: 1004, first_name: 'Dave' };
    for (let i = 0; i < 5; i++) rig.fake.userSays(dave, `msg ${i}`);
    await until(() => rig.fake.textsTo(dave.id).length === 1);
    await until(() => rig.fake.unconfirmed() === 0);
    await sleep(200);
    expect(rig.fake.textsTo(dave.id)).toEqual([PENDING_NOTICE]);
    expect(await rig.agent.services.store.db.contact.count({ where: { telegramId: '1004' } })).toBe(1);
  });

  it('the owner is always allowed, even when blocked', async () => {
    const owner = { id: 4242, first_name: 'Owner' };
    rig.model.queue({ text: 'yes, boss' });
    rig.fake.userSays(owner, 'status?');
    await until(() => rig.fake.textsTo(owner.id).includes('yes, boss'));
    await rig.json('PATCH', '/messenger/contacts/4242', { status: 'blocked' });
    rig.model.queue({ text: 'still here' });
    rig.fake.userSays(owner, 'again');
    await until(() => rig.fake.textsTo(owner.id).includes('still here'));
    expect(rig.fake.textsTo(owner.id)).not.toContain(PENDING_NOTICE);
  });

  it('group chats are ignored by default', async () => {
    const requests = rig.model.requests.length;
    rig.fake.userSays(alice, 'hello group', { id: -5001, type: 'group', title: 'friends' });
    rig.fake.userSays(carol, 'me too', { id: -5001, type: 'group', title: 'friends' });
    await until(() => rig.fake.unconfirmed() === 0);
    await sleep(150);
    expect(rig.fake.callsOf('sendMessage', -5001)).toHaveLength(0);
    expect(rig.model.requests.length).toBe(requests);
    expect((await rig.json<{ contacts: Array<{ telegram_id: string }> }>('GET', '/messenger/contacts')).body.contacts.map((c) => c.telegram_id)).not.toContain(
      '1003',
    );
  });

  it('delete removes the contact; the sender is a stranger again', async () => {
    expect(await rig.json('DELETE', '/telegram/contacts/1001')).toEqual({ status: 200, body: { status: 'ok', telegram_id: '1001' } });
    expect(await rig.json('DELETE', '/messenger/contacts/1001')).toMatchObject({ status: 404, body: { code: 'CONTACT_NOT_FOUND' } });
    const texts = rig.fake.textsTo(alice.id).length;
    rig.fake.userSays(alice, 'back again');
    await until(() => rig.fake.textsTo(alice.id).length === texts + 1);
    expect(rig.fake.textsTo(alice.id).at(-1)).toBe(PENDING_NOTICE);
    const pending = await rig.json<{ contacts: Array<{ telegram_id: string }> }>('GET', '/messenger/contacts?status=pending');
    expect(pending.body.contacts.map((c) => c.telegram_id)).toContain('1001');
  });
});
