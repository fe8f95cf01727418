/**
 * An agent loads grammY only when it has a bot token and trpc-to-openapi only when its OpenAPI
 * document is asked for, and pdf.js (unpdf) never in its own thread (a thread of its own reads
 * each PDF a web fetch brings, test/agents/web-pdf.test.ts): each is megabytes in every agent
 * process otherwise. Each package is wrapped so that the test sees when it is first imported;
 * everything else is a real agent over real HTTP (and the fake Telegram server for the bot).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startFakeTelegram, type FakeTelegram } from '../support/fake-telegram.js';
import { startTestAgent, type TestAgent } from '../support/servers.js';
import { alice, TELEGRAM_FAST_ENV, until } from '../messenger/helpers.js';

const loaded = vi.hoisted(() => ({ grammy: false, openapi: false, unpdf: false }));
vi.mock('grammy', async (importOriginal) => {
  loaded.grammy = true;
  return importOriginal();
});
vi.mock('trpc-to-openapi', async (importOriginal) => {
  loaded.openapi = true;
  return importOriginal();
});
vi.mock('unpdf', async (importOriginal) => {
  loaded.unpdf = true;
  return importOriginal();
});

let fake: FakeTelegram;
const agents: TestAgent[] = [];
beforeAll(async () => {
  fake = await startFakeTelegram();
});
afterAll(async () => {
  await Promise.all(agents.map((agent) => agent.stop()));
  await fake.close();
});

describe('modules an agent loads only when used', () => {
  it('without a bot token, before /openapi.json and with no PDF read, neither grammY nor trpc-to-openapi nor unpdf is loaded', async () => {
    const agent = await startTestAgent();
    agents.push(agent);
    expect((await fetch(`${agent.url}/health`)).status).toBe(200);
    const status = await fetch(`${agent.url}/telegram/status`, { headers: agent.auth });
    expect(await status.json()).toMatchObject({ connected: false });
    // Webhook calls to an agent without a bot are refused before anything is loaded.
    const webhook = await fetch(`${agent.url}/telegram/webhook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': 'x'.repeat(32) },
      body: '{"update_id":1}',
    });
    expect(webhook.status).toBe(404);
    expect(loaded).toEqual({ grammy: false, openapi: false, unpdf: false });

    // Unauthenticated, the document is refused before the generator is loaded.
    expect((await fetch(`${agent.url}/openapi.json`)).status).toBe(401);
    expect(loaded.openapi).toBe(false);
    const doc = await fetch(`${agent.url}/openapi.json`, { headers: agent.auth });
    expect(doc.status).toBe(200);
    expect(((await doc.json()) as { paths: Record<string, unknown> }).paths).toHaveProperty('/chat');
    expect(loaded).toEqual({ grammy: false, openapi: true, unpdf: false });
  });

  it('with a bot token the bot is loaded at start and answers', async () => {
    const agent = await startTestAgent({
      ...TELEGRAM_FAST_ENV,
      TELEGRAM_BOT_TOKEN: fake.token,
      TELEGRAM_API_ROOT: fake.apiRoot,
      TELEGRAM_OWNER_ID: String(alice.id),
    });
    agents.push(agent);
    await until(async () => ((await (await fetch(`${agent.url}/telegram/status`, { headers: agent.auth })).json()) as { connected: boolean }).connected);
    fake.userSays(alice, 'hello');
    await until(() => fake.textsTo(alice.id).length === 1);
    expect(loaded.grammy).toBe(true);
  });
});
