/**
 * Proactive messages (heartbeat, subagents) for `telegram:<id>` chats reach Telegram. Most
 * cases drive the delivery rules through a tiny PendingSource; the last suite runs the agent as
 * composed in services.ts, where the real pending store feeds the messenger.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAgentConfig } from '../../server/agent/config.js';
import { MessengerService, type PendingNotice, type PendingSource } from '../../server/agent/messenger/service.js';
import { createLogger } from '../../server/common/log.js';
import { startFakeTelegram, type FakeTelegram } from '../support/fake-telegram.js';
import { startTestAgent, type TestAgent } from '../support/servers.js';
import { alice, bob, sleep, startTelegramRig, TELEGRAM_FAST_ENV, until, type TelegramRig } from './helpers.js';

class TestPendingSource implements PendingSource {
  private readonly listeners = new Set<(m: PendingNotice) => void>();
  onPending(listener: (m: PendingNotice) => void) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  add(message: PendingNotice) {
    for (const listener of this.listeners) listener(message);
  }
  get size() {
    return this.listeners.size;
  }
}

let fake: FakeTelegram;
let agent: TestAgent;
let source: TestPendingSource;
let messenger: MessengerService;

beforeAll(async () => {
  fake = await startFakeTelegram();
  agent = await startTestAgent(); // no token: its own bot stays off
  const db = agent.services.store.db;
  await db.contact.create({ data: { telegramId: String(alice.id), username: 'alice', displayName: 'Alice', status: 'allowed' } });
  await db.contact.create({ data: { telegramId: String(bob.id), username: 'bob', displayName: 'Bob', status: 'blocked' } });
  source = new TestPendingSource();
  const config = loadAgentConfig({
    AGENT_SECRET: 'a-secret-of-sufficient-length',
    AGENT_WORKSPACE: agent.workspace,
    ...TELEGRAM_FAST_ENV,
    TELEGRAM_BOT_TOKEN: fake.token,
    TELEGRAM_API_ROOT: fake.apiRoot,
    TELEGRAM_OWNER_ID: '4242',
  });
  messenger = new MessengerService({ config, log: createLogger('test', 'silent'), db, chat: agent.services.chat, pending: source });
  messenger.start();
  await until(() => messenger.status().connected);
});
afterAll(async () => {
  await messenger.stop();
  await agent.stop();
  await fake.close();
});

describe('pending messages to Telegram', () => {
  it("a message for an allowed contact's chat is sent there, split when long", async () => {
    source.add({ chat_id: `telegram:${alice.id}`, content: 'Heartbeat: all quiet.', source: 'heartbeat' });
    await until(() => fake.textsTo(alice.id).length === 1);
    expect(fake.textsTo(alice.id)).toEqual(['Heartbeat: all quiet.']);
    source.add({ chat_id: `telegram:${alice.id}`, content: `${'a'.repeat(4000)}\n${'b'.repeat(200)}`, source: 'subagent' });
    await until(() => fake.textsTo(alice.id).length === 3);
    expect(fake.textsTo(alice.id).slice(1)).toEqual(['a'.repeat(4000), 'b'.repeat(200)]);
  });

  it('the owner gets them without a contact', async () => {
    source.add({ chat_id: 'telegram:4242', content: 'for the owner', source: 'heartbeat' });
    await until(() => fake.textsTo(4242).length === 1);
  });

  it('not sent: blocked or unknown contacts, other chats, malformed ids', async () => {
    const before = fake.callsOf('sendMessage').length;
    source.add({ chat_id: `telegram:${bob.id}`, content: 'no', source: 'heartbeat' });
    source.add({ chat_id: 'telegram:5555', content: 'no', source: 'heartbeat' });
    source.add({ chat_id: 'web-main', content: 'no', source: 'heartbeat' });
    source.add({ chat_id: 'telegram:abc', content: 'no', source: 'heartbeat' });
    source.add({ chat_id: 'telegram:-100200', content: 'no', source: 'heartbeat' }); // a group, groups off
    await sleep(200);
    expect(fake.callsOf('sendMessage').length).toBe(before);
  });

  it('stop unsubscribes from the source', async () => {
    const other = new TestPendingSource();
    const config = loadAgentConfig({ AGENT_SECRET: 'a-secret-of-sufficient-length', AGENT_WORKSPACE: agent.workspace });
    const off = new MessengerService({ config, log: createLogger('test', 'silent'), db: agent.services.store.db, chat: agent.services.chat, pending: other });
    expect(other.size).toBe(1);
    other.add({ chat_id: `telegram:${alice.id}`, content: 'no bot, nothing happens', source: 'heartbeat' });
    await off.stop();
    expect(other.size).toBe(0);
  });
});

describe('the agent as composed: pending store → Telegram', () => {
  let rig: TelegramRig;
  beforeAll(async () => {
    rig = await startTelegramRig();
    await rig.agent.services.store.db.contact.create({ data: { telegramId: String(alice.id), username: 'alice', displayName: 'Alice', status: 'allowed' } });
  });
  afterAll(() => rig.stop());

  it('a message added to the pending store reaches the Telegram chat and stays collectable', async () => {
    await rig.agent.services.pending.add({ chatId: `telegram:${alice.id}`, content: 'Subagent "report" finished.', source: 'subagent' });
    await until(() => rig.fake.textsTo(alice.id).includes('Subagent "report" finished.'));
    const collected = await rig.json<{ messages: Array<{ chat_id: string }> }>('GET', '/pending');
    expect(collected.body.messages.map((m) => m.chat_id)).toEqual([`telegram:${alice.id}`]);
  });
});
