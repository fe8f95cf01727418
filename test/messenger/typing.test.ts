/** The typing indicator is refreshed while a run is alive, and stops with it. */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadAgentConfig } from '../../server/agent/config.js';
import { MessengerService } from '../../server/agent/messenger/service.js';
import { createLogger } from '../../server/common/log.js';
import { FAST_ENV } from '../chat/helpers.js';
import { startFakeTelegram, type FakeTelegram } from '../support/fake-telegram.js';
import { startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';
import { startTestAgent, type TestAgent } from '../support/servers.js';
import { alice, sleep, TELEGRAM_FAST_ENV, until } from './helpers.js';

let fake: FakeTelegram;
let model: ScriptedModel;
let agent: TestAgent;
let messenger: MessengerService;

beforeAll(async () => {
  fake = await startFakeTelegram();
  model = await startScriptedModel();
  agent = await startTestAgent({ ...FAST_ENV, MODEL: model.modelSpec }); // no token: its own bot stays off
  await agent.services.store.db.contact.create({ data: { telegramId: String(alice.id), username: 'alice', displayName: 'Alice', status: 'allowed' } });
  const config = loadAgentConfig({
    AGENT_SECRET: 'a-secret-of-sufficient-length',
    AGENT_WORKSPACE: agent.workspace,
    ...TELEGRAM_FAST_ENV,
    TELEGRAM_BOT_TOKEN: fake.token,
    TELEGRAM_API_ROOT: fake.apiRoot,
  });
  messenger = new MessengerService({
    config,
    log: createLogger('test', 'silent'),
    db: agent.services.store.db,
    chat: agent.services.chat,
    typingRefreshMs: 100,
  });
  messenger.start();
  await until(() => messenger.status().connected);
});
afterAll(async () => {
  await messenger.stop();
  await agent.stop();
  await model.close();
  await fake.close();
});

it('typing is sent at once and refreshed until the reply is out, then stops', async () => {
  model.queue({ text: ['slow ', 'and ', 'steady ', 'wins'], delayMs: 150 });
  fake.userSays(alice, 'take your time');
  await until(() => fake.textsTo(alice.id).length === 1);
  expect(fake.textsTo(alice.id)).toEqual(['slow and steady wins']);
  const typing = fake.callsOf('sendChatAction', alice.id);
  expect(typing.length).toBeGreaterThanOrEqual(4);
  expect(typing.every((c) => c.params.action === 'typing')).toBe(true);
  const sent = fake.callsOf('sendMessage', alice.id)[0]!.at;
  await sleep(300);
  expect(fake.callsOf('sendChatAction', alice.id).filter((c) => c.at > sent + 50)).toHaveLength(0);
});
