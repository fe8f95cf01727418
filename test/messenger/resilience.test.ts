/** Bot API failures: 429 with retry_after, 5xx, dropped connections, a refused token. */
import { Writable } from 'node:stream';
import { rm } from 'node:fs/promises';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent } from '../../server/agent/app.js';
import { loadAgentConfig } from '../../server/agent/config.js';
import { startFakeTelegram } from '../support/fake-telegram.js';
import { tempDir } from '../support/servers.js';
import { PENDING_NOTICE } from '../../server/agent/messenger/service.js';
import { alice, bob, carol, sleep, startTelegramRig, TELEGRAM_FAST_ENV, until, type TelegramRig } from './helpers.js';

let rig: TelegramRig;
beforeAll(async () => {
  // getMe fails twice before answering: the bot connects anyway.
  rig = await startTelegramRig({}, { beforeAgent: (fake) => fake.fail('getMe', { status: 502 }, { drop: true }) });
  await rig.agent.services.store.db.contact.create({ data: { telegramId: String(alice.id), username: 'alice', displayName: 'Alice', status: 'allowed' } });
});
afterAll(() => rig.stop());

describe('Bot API errors', () => {
  it('getMe failures are retried until the bot connects', () => {
    expect(rig.fake.callsOf('getMe').length).toBeGreaterThanOrEqual(3);
    expect(rig.agent.services.messenger.status().connected).toBe(true);
  });

  it('429 with retry_after: the reply is sent after the wait', async () => {
    rig.fake.fail('sendMessage', { status: 429, description: 'Too Many Requests: retry after 1', retry_after: 1 });
    rig.model.queue({ text: 'patience' });
    rig.fake.userSays(alice, 'one');
    await until(() => rig.fake.textsTo(alice.id).length === 2, 8_000);
    const [refused, accepted] = rig.fake.callsOf('sendMessage', alice.id);
    expect(refused!.params.text).toBe('patience');
    expect(accepted!.params.text).toBe('patience');
    expect(accepted!.at - refused!.at).toBeGreaterThanOrEqual(900);
  });

  it('5xx and dropped connections on sendMessage: retried with backoff', async () => {
    rig.fake.fail('sendMessage', { status: 500 }, { drop: true }, { status: 502 });
    rig.model.queue({ text: 'made it' });
    const before = rig.fake.textsTo(alice.id).length;
    rig.fake.userSays(alice, 'two');
    await until(() => rig.fake.textsTo(alice.id).length === before + 4);
    expect(new Set(rig.fake.textsTo(alice.id).slice(before))).toEqual(new Set(['made it']));
  });

  it('getUpdates failures (5xx, 429, dropped) do not stop polling nor lose a new contact', async () => {
    rig.fake.fail('getUpdates', { status: 500 }, { drop: true }, { status: 429, retry_after: 0 }, { status: 502 });
    rig.fake.userSays(bob, 'hello?');
    await until(() => rig.fake.textsTo(bob.id).length === 1);
    expect(rig.fake.textsTo(bob.id)).toEqual([PENDING_NOTICE]);
    expect(await rig.agent.services.store.db.contact.findUnique({ where: { telegramId: String(bob.id) } })).toMatchObject({ status: 'pending' });
    expect(rig.agent.services.messenger.status().connected).toBe(true);
  });

  it('a failed pending notice is not lost: it is sent once a later message gets through', async () => {
    rig.fake.fail('sendMessage', ...Array.from({ length: 6 }, () => ({ status: 500 })));
    rig.fake.userSays(carol, 'hi');
    await until(() => rig.fake.callsOf('sendMessage', carol.id).length === 6);
    await sleep(100);
    expect(rig.fake.textsTo(carol.id)).toHaveLength(6); // all refused
    rig.fake.userSays(carol, 'hi again');
    await until(() => rig.fake.callsOf('sendMessage', carol.id).length === 7);
    await sleep(150);
    expect(rig.fake.callsOf('sendMessage', carol.id)).toHaveLength(7);
    expect(rig.fake.textsTo(carol.id).at(-1)).toBe(PENDING_NOTICE);
  });

  it('a final error (403: the user blocked the bot) is not retried and crashes nothing', async () => {
    rig.fake.fail('sendMessage', { status: 403, description: 'Forbidden: bot was blocked by the user' });
    rig.model.queue({ text: 'lost' });
    const before = rig.fake.callsOf('sendMessage', alice.id).length;
    rig.fake.userSays(alice, 'three');
    await until(() => rig.fake.callsOf('sendMessage', alice.id).length === before + 1);
    await sleep(150);
    expect(rig.fake.callsOf('sendMessage', alice.id)).toHaveLength(before + 1);
    rig.model.queue({ text: 'back' });
    rig.fake.userSays(alice, 'four');
    await until(() => rig.fake.textsTo(alice.id).at(-1) === 'back');
  });
});

describe('the Bot API unreachable for a while', () => {
  it('polling backs off and resumes when it is back; nothing crashes', async () => {
    const first = await startTelegramRig();
    const port = Number(new URL(first.fake.apiRoot).port);
    await first.fake.close(); // connection refused from now on
    await sleep(400); // a few failed polls, backing off (capped at TELEGRAM_RETRY_MAX)
    const back = await startFakeTelegram({ port });
    try {
      await first.agent.services.store.db.contact.create({
        data: { telegramId: String(alice.id), username: 'alice', displayName: 'Alice', status: 'allowed' },
      });
      first.model.queue({ text: 'I am back' });
      back.userSays(alice, 'still there?');
      await until(() => back.textsTo(alice.id).includes('I am back'), 8_000);
      expect(first.agent.services.messenger.status().connected).toBe(true);
    } finally {
      await first.agent.stop();
      await first.model.close();
      await back.close();
    }
  });
});

describe('a refused token', () => {
  it('status says not connected and the reason is logged', async () => {
    const fake = await startFakeTelegram();
    const lines: Array<Record<string, unknown>> = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    const workspace = await tempDir('agent-ws');
    const config = loadAgentConfig({
      AGENT_PORT: '0',
      AGENT_SECRET: 'a-secret-of-sufficient-length',
      AGENT_WORKSPACE: workspace,
      HEARTBEAT_INTERVAL: '0',
      ...TELEGRAM_FAST_ENV,
      TELEGRAM_BOT_TOKEN: '999:not-the-right-token',
      TELEGRAM_API_ROOT: fake.apiRoot,
    });
    const agent = await startAgent(config, pino({ level: 'info' }, sink));
    try {
      await until(() => lines.some((l) => String(l.msg).includes('token was refused')));
      const logged = lines.find((l) => String(l.msg).includes('token was refused'))!;
      expect(logged.reason).toBe('401 Unauthorized');
      expect(JSON.stringify(lines)).not.toContain('not-the-right-token');
      const res = await fetch(`${agent.url}/telegram/status`, { headers: { authorization: 'Bearer a-secret-of-sufficient-length' } });
      expect(await res.json()).toEqual({ connected: false, bot_username: '', bot_name: '' });
      expect(fake.callsOf('getMe')).toHaveLength(1); // final: not retried
      expect(fake.callsOf('getUpdates')).toHaveLength(0);
    } finally {
      await agent.close();
      await fake.close();
      await rm(workspace, { recursive: true, force: true });
    }
  });
});
