/**
 * Scheduled tasks through the account service (real HTTP: account service, local sandboxed agents
 * whose calls leave through the egress gateway, the scripted model, the fake Bot API):
 * - a reminder set through the proxy wakes the sleeping agent within seconds of its time, runs as
 *   one turn (one model call: the heartbeat, due later, is not run early) and arrives as a pending
 *   message and a Telegram message to the owner; its tokens are counted under `task`;
 * - tRPC procedures and REST paths serve the same tasks; another user's task id is 404 and leaves
 *   the task alone; a guest's agent holds 3 tasks and no cron closer than an hour;
 * - a proactive turn the day's budget has no room for does not run, and says so once (heartbeats
 *   every second and a task together: one notice);
 * - the user's time zone, kept on the account, reaches the agent: a running one is told when it
 *   changes, a sleeping one is not woken for it and reads it at its next start; the model is told
 *   the local time there, and a task it makes without a zone is read in the user's.
 */
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createTRPCClient, httpLink } from '@trpc/client';
import superjson from 'superjson';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { clearOfMidnightUtc, MIDNIGHT_MARGIN_MS } from '../support/clock.js';
import type { AccountRouter } from '@contracts/account/router.js';
import type { TokenPair } from '@contracts/account/tokens.js';
import type { LocalProvisioner } from '../../server/account/agents/provisioners/local/provisioner.js';
import { taskMessage } from '../../server/agent/tasks/runner.js';
import { until } from '../chat/helpers.js';
import { testDeviceId } from '../support/devices.js';
import { startFakeTelegram, type FakeTelegram } from '../support/fake-telegram.js';
import { lastUserText, startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';
import { freePort, startTestAccount, type TestAccount } from '../support/servers.js';

const alice = { id: 3001, first_name: 'Alice', username: 'alice' };
const STRETCH = 'Time to stretch, Alice!';

let model: ScriptedModel;
let fake: FakeTelegram;
let account: TestAccount;
let api: string;
const savedInterval = process.env.HEARTBEAT_INTERVAL;
let stretchAskedAt = 0;

beforeAll(async () => {
  model = await startScriptedModel({
    responder: (request) => {
      const text = lastUserText(request);
      if (text.startsWith('Heartbeat (')) return { text: 'heartbeat alert' };
      if (text.includes('stretch')) stretchAskedAt = Date.now();
      return { text: text.includes('stretch') ? STRETCH : 'ok' };
    },
  });
  fake = await startFakeTelegram();
  // Heartbeats every hour: the wake for a task must not bring one forward.
  process.env.HEARTBEAT_INTERVAL = '3600';
  const port = await freePort();
  account = await startTestAccount('pglite', {
    PORT: String(port),
    TELEGRAM_WEBHOOK_BASE: `http://127.0.0.1:${port}`,
    AGENT_PROVISIONER: 'local',
    AGENT_IDLE_TIMEOUT: '1',
    AGENT_STOP_GRACE: '0.5',
    AGENT_WAKE_POLL: '0.5',
    MODEL: model.modelSpec,
    TELEGRAM_API_ROOT: fake.apiRoot,
  });
  api = `${account.url}/api/v1`;
});
afterAll(async () => {
  await account?.stop();
  await fake?.close();
  await model?.close();
  if (savedInterval === undefined) delete process.env.HEARTBEAT_INTERVAL;
  else process.env.HEARTBEAT_INTERVAL = savedInterval;
});

async function guest(label: string): Promise<string> {
  const res = await fetch(`${api}/auth/guest`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ device_id: testDeviceId(label) }),
  });
  return ((await res.json()) as TokenPair).access_token;
}

/** A guest flipped to a full account (sign-in methods are other suites' business). */
async function fullUser(label: string): Promise<{ token: string; userId: string }> {
  const first = await guest(label);
  const me = (await (await fetch(`${api}/auth/me`, { headers: { authorization: `Bearer ${first}` } })).json()) as { user_id: string };
  await account.services.store.db.user.update({ where: { id: me.user_id }, data: { tier: 'full' } });
  return { token: await guest(label), userId: me.user_id };
}

async function call<T = Record<string, unknown>>(token: string, method: string, p: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${api}${p}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
}

/** HH:MM of an instant in a zone. */
const clockIn = (zone: string, iso: string) => new Intl.DateTimeFormat('en-GB', { timeZone: zone, hour: '2-digit', minute: '2-digit' }).format(new Date(iso));
const processes = () => (account.services.agents.provisioner as LocalProvisioner).processes().length;
const inSeconds = (s: number) => new Date(Date.now() + s * 1000).toISOString();
type Task = { id: string; status: string; next_run_at: string | null; prompt: string };
type Usage = { usage: { model_tokens: { used: number; by_source: Record<string, number> } } };

// Daily figures are filled and read back: no test straddles midnight UTC (support/clock.ts).
beforeEach(() => clearOfMidnightUtc(), MIDNIGHT_MARGIN_MS + 5_000);
describe('a reminder while the agent sleeps', () => {
  it('wakes the agent at its time, runs one turn, and arrives as a pending message and on Telegram', async () => {
    const owner = await fullUser('task-owner');
    expect((await call(owner.token, 'PUT', '/agent/messenger/bot', { token: fake.token })).status).toBe(200);
    const { code } = (await call<{ code: string }>(owner.token, 'POST', '/agent/messenger/bot/owner-code')).body;
    fake.userSays(alice, `/start ${code}`);
    await until(() => fake.textsTo(alice.id).length > 0, 20_000);
    const agent = await account.services.store.db.agent.findFirstOrThrow({ where: { userId: owner.userId } });
    await writeFile(path.join(account.dataDir, 'agents', agent.id, 'workspace', 'HEARTBEAT.md'), '- check the plants\n');

    const at = inSeconds(8);
    const created = await call<Task>(owner.token, 'POST', '/agent/tasks', { prompt: 'Remind me to stretch', at, chat_id: 'main' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ chat_id: 'main', at, status: 'active', next_run_at: new Date(at).toISOString() });

    await until(() => processes() === 0, 15_000);
    const row = await account.services.store.db.agent.findUniqueOrThrow({ where: { id: agent.id } });
    expect(row.nextWakeAt?.toISOString()).toBe(new Date(at).toISOString());
    const asleep = model.requests.length;
    expect(Date.now()).toBeLessThan(new Date(at).getTime());

    let wokeAt = 0;
    await until(() => {
      if (!wokeAt && processes() > 0) wokeAt = Date.now();
      return fake.textsTo(alice.id).includes(STRETCH);
    }, 25_000);

    // Started within a few seconds of its time (a round of the wake poll); the turn follows its cold start.
    const late = (t: number) => t - new Date(at).getTime();
    console.log(
      `task: agent started ${late(wokeAt)} ms after its time, model asked after ${late(stretchAskedAt)} ms, on Telegram after ${late(Date.now())} ms`,
    );
    expect(late(wokeAt)).toBeGreaterThanOrEqual(0);
    expect(late(wokeAt)).toBeLessThan(5_000);
    expect(stretchAskedAt).toBeGreaterThan(wokeAt);
    const pending = await call<{ messages: Array<{ chat_id: string; content: string; source: string }> }>(owner.token, 'GET', '/agent/pending');
    expect(pending.body.messages).toContainEqual(expect.objectContaining({ chat_id: 'main', content: STRETCH, source: 'task' }));
    // One turn, one model call: no heartbeat came with the wake.
    expect(model.requests.slice(asleep).map(lastUserText)).toEqual([taskMessage('Remind me to stretch')]);
    // The gateway took the source for its meter and did not send it on.
    expect(model.requestHeaders.at(-1)!['x-model-source']).toBeUndefined();
    const usage = (await call<Usage>(owner.token, 'GET', '/account')).body.usage.model_tokens;
    expect(usage.by_source.task).toBeGreaterThan(0);
    expect(usage.by_source.heartbeat).toBe(0);
    expect(Object.values(usage.by_source).reduce((sum, n) => sum + n, 0)).toBe(usage.used);
    const listed = await call<{ tasks: Task[] }>(owner.token, 'GET', '/agent/tasks');
    expect(listed.body.tasks).toEqual([expect.objectContaining({ id: created.body.id, status: 'done', next_run_at: null })]);
  }, 90_000);
});

describe('the proxy', () => {
  it('serves the same tasks over tRPC; another user cannot see, change or delete them', async () => {
    const ann = await fullUser('task-ann');
    const mallory = await fullUser('task-mallory');
    const trpc = createTRPCClient<AccountRouter>({
      links: [httpLink({ url: `${account.url}/trpc`, transformer: superjson, headers: { authorization: `Bearer ${ann.token}` } })],
    });
    const task = await trpc.agent.tasks.create.mutate({ prompt: 'Weekly review', cron: '0 9 * * 1', timezone: 'Europe/Berlin' });
    expect((await call<{ tasks: Task[] }>(ann.token, 'GET', '/agent/tasks')).body.tasks.map((t) => t.id)).toEqual([task.id]);
    expect((await call<{ tasks: Task[] }>(mallory.token, 'GET', '/agent/tasks')).body.tasks).toEqual([]);
    expect(await call(mallory.token, 'PATCH', `/agent/tasks/${task.id}`, { status: 'paused', prompt: 'hijacked' })).toMatchObject({
      status: 404,
      body: { code: 'TASK_NOT_FOUND' },
    });
    expect(await call(mallory.token, 'DELETE', `/agent/tasks/${task.id}`)).toMatchObject({ status: 404, body: { code: 'TASK_NOT_FOUND' } });
    expect((await trpc.agent.tasks.list.query()).tasks).toEqual([expect.objectContaining({ id: task.id, status: 'active', prompt: 'Weekly review' })]);
    const paused = await call<Task>(ann.token, 'PATCH', `/agent/tasks/${task.id}`, { status: 'paused' });
    expect(paused.body).toMatchObject({ status: 'paused', next_run_at: null });
    expect((await call(ann.token, 'DELETE', `/agent/tasks/${task.id}`)).status).toBe(204);
    // Other spellings of the routes never reach the agent.
    expect((await call(ann.token, 'GET', '/agent/TASKS')).status).toBe(404);
    expect((await call(ann.token, 'PUT', '/agent/tasks')).status).toBe(405);
  });

  it("holds a guest's agent to 3 tasks and an hour between runs", async () => {
    const token = await guest('task-guest');
    const often = await call<{ code: string; detail: string }>(token, 'POST', '/agent/tasks', { prompt: 'spam', cron: '* * * * *' });
    expect(often).toMatchObject({ status: 400, body: { code: 'INVALID_SCHEDULE' } });
    expect(often.body.detail).toContain('hour');
    try {
      for (let i = 0; i < 3; i++) expect((await call(token, 'POST', '/agent/tasks', { prompt: `t${i}`, cron: '0 * * * *' })).status).toBe(201);
      expect(await call(token, 'POST', '/agent/tasks', { prompt: 't3', at: inSeconds(600) })).toMatchObject({ status: 403, body: { code: 'TASK_LIMIT' } });
    } finally {
      // Left behind, the hourly tasks would wake this agent at the next full hour and ask the shared
      // model in the middle of the tests below, which count its requests.
      const { tasks } = (await call<{ tasks: Task[] }>(token, 'GET', '/agent/tasks')).body;
      for (const task of tasks) await call(token, 'DELETE', `/agent/tasks/${task.id}`);
    }
  });
});

describe('the budget', () => {
  it('a task the day has no budget for does not run, and the user is told once', async () => {
    const spender = await fullUser('task-spender');
    // The whole allowance of the day is spent.
    await account.services.store.db.user.update({ where: { id: spender.userId }, data: { modelDailyTokens: 1_000 } });
    await account.services.modelBudget.record(spender.userId, { tokensIn: 1_000, tokensOut: 0 }, false);
    const first = await call<Task>(spender.token, 'POST', '/agent/tasks', { prompt: 'first', at: inSeconds(8), chat_id: 'main' });
    const second = await call<Task>(spender.token, 'POST', '/agent/tasks', { prompt: 'second', at: inSeconds(9), chat_id: 'main' });
    const before = model.requests.length;
    await until(async () => {
      const { tasks } = (await call<{ tasks: Task[] }>(spender.token, 'GET', '/agent/tasks')).body;
      return tasks.every((task) => task.status === 'done');
    }, 20_000);
    expect(model.requests.length).toBe(before);
    const pending = (await call<{ messages: Array<{ content: string; source: string }> }>(spender.token, 'GET', '/agent/pending')).body.messages;
    expect(pending).toHaveLength(1);
    expect(pending[0]).toMatchObject({ source: 'task' });
    expect(pending[0]!.content).toMatch(/"(first|second)" did not run: today's model budget is used up/);
    expect([first.status, second.status]).toEqual([201, 201]);
  });
});

describe('missed while the account service was down', () => {
  it('a task whose time passed while no account instance ran runs once when one comes back', async () => {
    // One issuer across both instances, as behind one address: the user's token stays good.
    const env = { BASE_URL: 'http://account.test', AGENT_PROVISIONER: 'local', AGENT_IDLE_TIMEOUT: '1', AGENT_WAKE_POLL: '0.5', MODEL: model.modelSpec };
    const first = await startTestAccount('pglite', env);
    let second: TestAccount | undefined;
    try {
      const res = await fetch(`${first.url}/api/v1/auth/guest`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ device_id: testDeviceId('task-downtime') }),
      });
      const token = ((await res.json()) as TokenPair).access_token;
      const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
      const at = inSeconds(4);
      const created = await fetch(`${first.url}/api/v1/agent/tasks`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ prompt: 'Remind me to stretch during the outage', at, chat_id: 'main' }),
      });
      expect(created.status).toBe(201);
      const before = model.requests.length;
      // The service (and with it every local agent) stops before the task's time, and is away past it.
      await first.stop({ keepData: true });
      await new Promise((resolve) => setTimeout(resolve, new Date(at).getTime() - Date.now() + 2_000));
      expect(model.requests.length).toBe(before);

      second = await startTestAccount('pglite', { ...env, DATA_DIR: first.dataDir });
      const ran = () => model.requests.slice(before).filter((r) => lastUserText(r) === taskMessage('Remind me to stretch during the outage')).length;
      await until(() => ran() === 1, 20_000);
      const pending = async () =>
        ((await (await fetch(`${second!.url}/api/v1/agent/pending`, { headers })).json()) as { messages: Array<{ source: string; content: string }> }).messages;
      expect(await pending()).toEqual([expect.objectContaining({ source: 'task', content: STRETCH })]);
      // Once: neither a further wake nor the agent's own start runs it again.
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      expect(ran()).toBe(1);
    } finally {
      await second?.stop();
      await rm(first.dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('the budget, for heartbeats and tasks together', () => {
  it('with the day spent, neither heartbeats nor a task reach the model, and the user is told once', async () => {
    // An instance whose agents run a heartbeat every second (local agents take HEARTBEAT_* from its environment at start).
    process.env.HEARTBEAT_INTERVAL = '1';
    const fast = await startTestAccount('pglite', { AGENT_PROVISIONER: 'local', AGENT_WAKE_POLL: '0.5', MODEL: model.modelSpec });
    process.env.HEARTBEAT_INTERVAL = '3600';
    try {
      const first = await fetch(`${fast.url}/api/v1/auth/guest`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ device_id: testDeviceId('heartbeat-spender') }),
      });
      const token = ((await first.json()) as TokenPair).access_token;
      const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
      const me = (await (await fetch(`${fast.url}/api/v1/auth/me`, { headers })).json()) as { user_id: string };
      // A chat for the heartbeat to report to, while there is budget.
      await (await fetch(`${fast.url}/api/v1/agent/chat`, { method: 'POST', headers, body: JSON.stringify({ message: 'hi', chat_id: 'main' }) })).text();
      await fast.services.store.db.user.update({ where: { id: me.user_id }, data: { modelDailyTokens: 1_000 } });
      await fast.services.modelBudget.record(me.user_id, { tokensIn: 1_000, tokensOut: 0 }, true);
      const before = model.requests.length;
      const agent = await fast.services.store.db.agent.findFirstOrThrow({ where: { userId: me.user_id } });
      await writeFile(path.join(fast.dataDir, 'agents', agent.id, 'workspace', 'HEARTBEAT.md'), '- check the plants\n');
      const task = await fetch(`${fast.url}/api/v1/agent/tasks`, { method: 'POST', headers, body: JSON.stringify({ prompt: 'water them', at: inSeconds(4) }) });
      expect(task.status).toBe(201);
      // Several heartbeat ticks and the task's time pass.
      await until(async () => {
        const { tasks } = (await (await fetch(`${fast.url}/api/v1/agent/tasks`, { headers })).json()) as { tasks: Task[] };
        return tasks.every((t) => t.status === 'done');
      }, 20_000);
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      expect(model.requests.length).toBe(before);
      const pending = (await (await fetch(`${fast.url}/api/v1/agent/pending`, { headers })).json()) as { messages: Array<{ content: string; source: string }> };
      // Told once, by the first refusal: a heartbeat's (one a second), before the task's time came.
      expect(pending.messages).toHaveLength(1);
      expect(pending.messages[0]).toMatchObject({ source: 'heartbeat' });
      expect(pending.messages[0]!.content).toMatch(/^The heartbeat check did not run: today's model budget is used up/);
      const usage = (await fast.services.modelBudget.status(me.user_id)).by_source;
      expect(usage.heartbeat + usage.task).toBe(0);
    } finally {
      await fast.stop();
    }
  }, 60_000);
});

describe("the user's time zone", () => {
  const agentRunning = async (userId: string) => {
    const agent = await account.services.store.db.agent.findFirst({ where: { userId } });
    return (account.services.agents.provisioner as LocalProvisioner).processes().some((p) => p.agentId === agent?.id);
  };
  const toolDescription = (request: (typeof model.requests)[number]) =>
    request.tools?.find((tool) => tool.function.name === 'schedule_task')?.function.description ?? '';

  it('reaches a running agent at once and a sleeping one at its next start; a task the model makes without a zone is read in it', async () => {
    const user = await fullUser('task-zone');
    expect((await call(user.token, 'POST', '/agent/tasks', { prompt: 'start the agent', at: inSeconds(3600) })).status).toBe(201);
    expect(await agentRunning(user.userId)).toBe(true);
    expect((await call(user.token, 'PUT', '/account/timezone', { timezone: 'Europe/Berlin' })).status).toBe(204);

    // "Every day at 9": the model leaves the zone out, as the tool's description tells it to.
    model.queue({ toolCalls: [{ name: 'schedule_task', args: { action: 'create', prompt: 'Morning digest', cron: '0 9 * * *' } }] }, { text: 'Scheduled.' });
    const before = model.requests.length;
    const reply = await fetch(`${api}/agent/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'Every day at 9, a digest please', chat_id: 'main' }),
    });
    await reply.text();
    expect(toolDescription(model.requests[before]!)).toMatch(
      /The user's time zone is Europe\/Berlin; it is now \w+day \d{4}-\d\d-\d\d \d\d:\d\d in Europe\/Berlin \(UTC\+0[12]:00\)/,
    );
    const tasks = (await call<{ tasks: Array<Task & { timezone: string; cron?: string }> }>(user.token, 'GET', '/agent/tasks')).body.tasks;
    const digest = tasks.find((task) => task.prompt === 'Morning digest');
    expect(digest).toMatchObject({ cron: '0 9 * * *', timezone: 'Europe/Berlin' });
    expect(clockIn('Europe/Berlin', digest!.next_run_at!)).toBe('09:00');

    // Asleep: a new zone is kept on the account and does not wake the agent; its next start reads it.
    await until(async () => !(await agentRunning(user.userId)), 15_000);
    expect((await call(user.token, 'PUT', '/account/timezone', { timezone: 'Asia/Tokyo' })).status).toBe(204);
    expect(await agentRunning(user.userId)).toBe(false);
    const created = await call<Task & { timezone: string }>(user.token, 'POST', '/agent/tasks', { prompt: 'Tokyo time', cron: '30 7 * * *' });
    expect(created.body.timezone).toBe('Asia/Tokyo');
    expect(clockIn('Asia/Tokyo', created.body.next_run_at!)).toBe('07:30');
    // The same zone again changes nothing and tells nobody; an unknown one is refused.
    expect((await call(user.token, 'PUT', '/account/timezone', { timezone: 'Asia/Tokyo' })).status).toBe(204);
    expect((await call(user.token, 'PUT', '/account/timezone', { timezone: 'Mars/Olympus_Mons' })).status).toBe(400);
    expect((await call<{ timezone: string }>(user.token, 'GET', '/account')).body.timezone).toBe('Asia/Tokyo');
  }, 60_000);
});
