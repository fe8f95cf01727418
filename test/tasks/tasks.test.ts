/**
 * Scheduled tasks on the agent (docs/api.md, "Scheduled tasks"), driven by the scripted model: the
 * API's shapes and refusals, a one-shot task that runs as a turn in its chat and becomes a pending
 * message, pause, resume and delete, the limits (tasks per agent, minimum interval) on the API and
 * through the model's tool (a prompt that asks for hundreds of tasks), a missed recurring task run
 * once, and the weekday cron in Europe/Berlin across both DST changes.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { openAgentStore, type AgentStore } from '../../server/agent/store.js';
import { checkCron, nextCronRun } from '../../server/agent/tasks/schedule.js';
import { TaskStore } from '../../server/agent/tasks/tasks.js';
import { taskMessage, type TaskOutcome } from '../../server/agent/tasks/runner.js';
import { lastUserText, toolResults } from '../support/scripted-model.js';
import { tempDir } from '../support/servers.js';
import { startChatRig, type ChatRig } from '../chat/helpers.js';
import { gate } from '../support/gate.js';

type Task = { id: string; prompt: string; chat_id: string; at?: string; cron?: string; timezone: string; status: string; next_run_at: string | null };
type Pending = { chat_id: string; content: string; source: string; created_at: string };

let rig: ChatRig;
beforeAll(async () => {
  rig = await startChatRig({ TASKS_MAX: '3', TASK_MIN_INTERVAL: '3600' });
});
afterAll(() => rig.stop());

async function call<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${rig.agent.url}${path}`, {
    method,
    headers: { ...rig.agent.auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
}

const inSeconds = (s: number) => new Date(Date.now() + s * 1000).toISOString().replace('Z', '+00:00');
const runner = () => rig.agent.services.tasks.runner;

/**
 * Resolves with the next task turn that ends. Subscribed before the task is made: on a loaded
 * machine a task due in a fraction of a second may end before its POST has answered.
 */
function nextTurn(): Promise<{ id: string; outcome: TaskOutcome }> {
  return new Promise((resolve) => {
    const previous = runner().onTurnEnded;
    runner().onTurnEnded = (id, outcome) => {
      previous(id, outcome);
      runner().onTurnEnded = previous;
      resolve({ id, outcome });
    };
  });
}

async function deleteAll(): Promise<void> {
  const { body } = await call<{ tasks: Task[] }>('GET', '/tasks');
  for (const task of body.tasks) await call('DELETE', `/tasks/${task.id}`);
}
// Each test starts with no tasks, even after one that failed half-way.
afterEach(deleteAll);

describe('POST /tasks', () => {
  it('answers 201 with the shape of the issue, in a chat of its own when none is given', async () => {
    const at = inSeconds(3600);
    const { status, body } = await call<Task>('POST', '/tasks', { prompt: 'Water the plants', at });
    expect(status).toBe(201);
    expect(body).toEqual({
      id: expect.stringMatching(/^task_[0-9a-f]{16}$/),
      prompt: 'Water the plants',
      chat_id: `task:${body.id}`,
      at,
      timezone: 'UTC',
      status: 'active',
      next_run_at: new Date(at).toISOString(),
    });
    const cron = await call<Task>('POST', '/tasks', { prompt: 'Weekly review', cron: '0 9 * * 1', timezone: 'Europe/Berlin', chat_id: 'main' });
    expect(cron.status).toBe(201);
    expect(cron.body).toMatchObject({ chat_id: 'main', cron: '0 9 * * 1', timezone: 'Europe/Berlin', status: 'active' });
    expect(cron.body).not.toHaveProperty('at');
    expect(new Date(cron.body.next_run_at!).getTime()).toBeGreaterThan(Date.now());
    // Active tasks list by next run: on a Monday morning the weekly cron comes before the one-shot.
    const bySoonest = [body, cron.body].sort((a, b) => Date.parse(a.next_run_at!) - Date.parse(b.next_run_at!));
    const list = await call<{ tasks: Task[] }>('GET', '/tasks');
    expect(list.body.tasks.map((t) => t.id)).toEqual(bySoonest.map((t) => t.id));
  });

  it.each([
    ['a cron of four fields', { cron: '0 9 * *' }, 'INVALID_SCHEDULE'],
    ['a cron that does not parse', { cron: 'every day at nine' }, 'INVALID_SCHEDULE'],
    ['a cron that never fires', { cron: '0 9 31 2 *' }, 'INVALID_SCHEDULE'],
    ['a past at', { at: '2020-01-01T09:00:00+01:00' }, 'INVALID_SCHEDULE'],
    ['an unknown zone', { cron: '0 9 * * *', timezone: 'Mars/Olympus_Mons' }, 'INVALID_SCHEDULE'],
    ['an at without offset', { at: '2099-01-01T09:00:00' }, 'VALIDATION_FAILED'],
    ['both at and cron', { at: '2099-01-01T09:00:00Z', cron: '0 9 * * *' }, 'VALIDATION_FAILED'],
    ['neither', {}, 'VALIDATION_FAILED'],
    ['a huge prompt', { at: '2099-01-01T09:00:00Z', prompt: 'x'.repeat(4_001) }, 'VALIDATION_FAILED'],
    ['a hostile chat id', { at: '2099-01-01T09:00:00Z', chat_id: '../../etc' }, 'VALIDATION_FAILED'],
  ])('400 for %s, and nothing is stored', async (_name, fields, code) => {
    const { status, body } = await call<{ code: string; detail: string }>('POST', '/tasks', { prompt: 'p', ...fields });
    expect(status).toBe(400);
    expect(body.code).toBe(code);
    expect((await call<{ tasks: Task[] }>('GET', '/tasks')).body.tasks).toEqual([]);
  });
});

describe("the user's time zone", () => {
  /** The account service's call (tRPC, with the agent secret; not proxied to users). */
  const setZone = async (timezone: string, auth: Record<string, string> = rig.agent.auth) => {
    const res = await fetch(`${rig.agent.url}/trpc/tasks.setTimezone`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ json: { timezone } }),
    });
    return { status: res.status, body: (await res.json()) as { error?: { json: { data: { code: string } } } } };
  };

  it('is the zone of a task made without one; an unknown zone is refused, a caller without the secret too', async () => {
    expect((await setZone('Europe/Berlin')).status).toBe(200);
    const { body: task } = await call<Task>('POST', '/tasks', { prompt: 'Berlin mornings', cron: '0 9 * * 1-5' });
    expect(task.timezone).toBe('Europe/Berlin');
    expect(new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Berlin', hour: '2-digit', minute: '2-digit' }).format(new Date(task.next_run_at!))).toBe(
      '09:00',
    );
    expect((await setZone('Mars/Olympus_Mons')).status).toBe(400);
    expect((await setZone('Asia/Tokyo', {})).status).toBe(401);
    // Kept in agent.db: an agent started without USER_TIMEZONE still has it.
    expect(await rig.agent.services.store.db.agentState.findUnique({ where: { key: 'user_timezone' } })).toMatchObject({ value: 'Europe/Berlin' });
    expect((await setZone('UTC')).status).toBe(200);
  });
});

describe('a one-shot task at its time', () => {
  it('runs as a turn in its chat and its answer becomes a pending message with source "task"', async () => {
    rig.model.respond((request) => ({ text: lastUserText(request).includes('Stretch') ? 'Time to stretch!' : 'ok' }));
    const before = rig.model.requests.length;
    const ended = nextTurn();
    const { body: task } = await call<Task>('POST', '/tasks', { prompt: 'Stretch reminder', at: inSeconds(1.5), chat_id: 'desk' });
    expect(await ended).toEqual({ id: task.id, outcome: 'ok' });
    expect(rig.model.requests.length).toBe(before + 1);
    expect(lastUserText(rig.model.requests.at(-1)!)).toBe(taskMessage('Stretch reminder'));
    expect(rig.model.requestHeaders.at(-1)!['x-model-source']).toBe('task');
    const pending = (await call<{ messages: Pending[] }>('GET', '/pending')).body.messages;
    expect(pending).toEqual([{ chat_id: 'desk', content: 'Time to stretch!', source: 'task', created_at: expect.any(String) }]);
    const history = await call<{ messages: Array<{ type: string; content?: string; name?: string }> }>('GET', '/chat/desk/history');
    expect(history.body.messages).toEqual([
      { type: 'text', content: taskMessage('Stretch reminder'), name: 'user', message_id: expect.any(String) },
      { type: 'text', content: 'Time to stretch!' },
    ]);
    const done = (await call<{ tasks: Task[] }>('GET', '/tasks')).body.tasks.find((t) => t.id === task.id);
    expect(done).toMatchObject({ status: 'done', next_run_at: null });
    // A task that has run cannot be resumed; it can be deleted.
    expect((await call<{ code: string }>('PATCH', `/tasks/${task.id}`, { status: 'active' })).body.code).toBe('TASK_FINISHED');
  });

  it('waits for a reply running in its chat instead of cutting it', async () => {
    // The user's reply is held until the task has come due (however loaded the machine), then sent.
    const userReply = gate();
    const isTask = (request: Parameters<typeof lastUserText>[0]) => lastUserText(request).startsWith('[Scheduled task]');
    rig.model.respond(async (request) => {
      if (isTask(request)) return { text: 'task answer' };
      await userReply.opened;
      return { text: ['slow ', 'user answer'] };
    });
    const before = rig.model.requests.length;
    const user = rig.chat('busy', 'a question');
    await vi.waitFor(() => expect(rig.model.requests.slice(before).map(lastUserText)).toContain('a question'), { timeout: 10_000 });
    const ended = nextTurn();
    const at = inSeconds(1);
    const created = await call<Task>('POST', '/tasks', { prompt: 'Ping', at, chat_id: 'busy' });
    expect(created.status).toBe(201);
    const task = created.body;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, Date.parse(at) - Date.now()) + 300));
    expect(rig.model.requests.slice(before).some(isTask)).toBe(false);
    userReply.open();
    expect(await ended).toEqual({ id: task.id, outcome: 'ok' });
    const frames = await user;
    expect(frames.map((f) => f.data.type)).not.toContain('error');
    const history = (await call<{ messages: Array<{ content?: string }> }>('GET', '/chat/busy/history')).body.messages.map((m) => m.content);
    expect(history).toEqual(['a question', 'slow user answer', taskMessage('Ping'), 'task answer']);
    await call('GET', '/pending');
  });
});

describe('pause, resume, delete', () => {
  it('pausing clears the next run, resuming works it out again, deleting removes it', async () => {
    const { body: task } = await call<Task>('POST', '/tasks', { prompt: 'Daily', cron: '30 7 * * *', timezone: 'Asia/Tokyo' });
    const paused = await call<Task>('PATCH', `/tasks/${task.id}`, { status: 'paused', prompt: 'Daily digest' });
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ status: 'paused', next_run_at: null, prompt: 'Daily digest' });
    const resumed = await call<Task>('PATCH', `/tasks/${task.id}`, { status: 'active' });
    expect(resumed.body).toMatchObject({ status: 'active', next_run_at: task.next_run_at });
    expect((await call('DELETE', `/tasks/${task.id}`)).status).toBe(204);
    expect((await call<{ tasks: Task[] }>('GET', '/tasks')).body.tasks).toEqual([]);
  });

  it('404 for an id it does not hold, 400 for one that is not an id', async () => {
    const unknown = 'task_0123456789abcdef';
    for (const [method, body] of [
      ['PATCH', { status: 'paused' }],
      ['DELETE', undefined],
    ] as const) {
      const answer = await call<{ code: string }>(method, `/tasks/${unknown}`, body);
      expect(answer.status).toBe(404);
      expect(answer.body.code).toBe('TASK_NOT_FOUND');
    }
    expect((await call('DELETE', '/tasks/..%2Fagent.db')).status).toBe(400);
  });

  it('a paused task does not run', async () => {
    const { body: task } = await call<Task>('POST', '/tasks', { prompt: 'never', at: inSeconds(0.5) });
    await call('PATCH', `/tasks/${task.id}`, { status: 'paused' });
    const before = rig.model.requests.length;
    await new Promise((resolve) => setTimeout(resolve, 800));
    await runner().tick();
    expect(rig.model.requests.length).toBe(before);
    // Its time passed while paused: it cannot be resumed.
    expect((await call<{ code: string }>('PATCH', `/tasks/${task.id}`, { status: 'active' })).body.code).toBe('INVALID_SCHEDULE');
  });
});

describe('limits', () => {
  it('TASKS_MAX tasks at most (403 TASK_LIMIT), and recurring ones no closer than TASK_MIN_INTERVAL', async () => {
    for (let i = 0; i < 3; i++) expect((await call('POST', '/tasks', { prompt: `t${i}`, at: inSeconds(3600) })).status).toBe(201);
    const fourth = await call<{ code: string }>('POST', '/tasks', { prompt: 't4', at: inSeconds(3600) });
    expect(fourth.status).toBe(403);
    expect(fourth.body.code).toBe('TASK_LIMIT');
    await deleteAll();
    for (const cron of ['* * * * *', '*/30 * * * *', '0,1 9 * * *']) {
      const answer = await call<{ code: string; detail: string }>('POST', '/tasks', { prompt: 'often', cron });
      expect(answer.status).toBe(400);
      expect(answer.body.detail).toContain('at most once every hour');
    }
    expect((await call('POST', '/tasks', { prompt: 'hourly', cron: '0 * * * *' })).status).toBe(201);
  });

  it('a prompt that asks the tool for hundreds of tasks gets the limit and tool errors', async () => {
    const calls = Array.from({ length: 300 }, (_, i) => ({ name: 'schedule_task', args: { action: 'create', prompt: `spam ${i}`, cron: '* * * * *' } }));
    const creates = Array.from({ length: 300 }, (_, i) => ({ name: 'schedule_task', args: { action: 'create', prompt: `spam ${i}`, at: inSeconds(3600) } }));
    rig.model.queue({ toolCalls: [...calls, ...creates] }, { text: 'done scheduling' });
    await rig.chat('hostile', 'Schedule a thousand tasks');
    const { body } = await call<{ tasks: Task[] }>('GET', '/tasks');
    expect(body.tasks).toHaveLength(3);
    expect(body.tasks.every((task) => task.chat_id === 'hostile' && task.at !== undefined)).toBe(true);
    const results = toolResults(rig.model.requests.at(-1)!).map((r) => r.content);
    expect(results.filter((r) => r.includes('at most once every hour'))).toHaveLength(300);
    expect(results.filter((r) => r.includes('TASK_LIMIT') || r.includes('may hold 3'))).toHaveLength(297);
  });
});

describe('missed while asleep', () => {
  it('a recurring task that missed several runs runs once, then moves to its next time', async () => {
    rig.model.respond(() => ({ text: 'digest' }));
    const { body: task } = await call<Task>('POST', '/tasks', { prompt: 'Digest', cron: '0 6 * * *', timezone: 'UTC' });
    // As if the agent had slept through three days of it.
    await rig.agent.services.store.db.task.update({ where: { id: task.id }, data: { nextRunAt: new Date(Date.now() - 3 * 86_400_000) } });
    const before = rig.model.requests.length;
    const ended = nextTurn();
    await runner().tick();
    expect(await ended).toEqual({ id: task.id, outcome: 'ok' });
    await runner().tick();
    expect(rig.model.requests.length).toBe(before + 1);
    const after = (await call<{ tasks: Task[] }>('GET', '/tasks')).body.tasks[0]!;
    expect(after.status).toBe('active');
    expect(after.next_run_at).toBe((await nextCronRun('0 6 * * *', 'UTC', new Date()))!.toISOString());
    await call('GET', '/pending');
  });
});

describe('a weekday cron in Europe/Berlin across DST', () => {
  const weekdays8 = '0 8 * * 1-5';
  it.each([
    // Friday before spring-forward (CET, +01:00) → Monday after it (CEST, +02:00).
    ['2026-03-27T07:00:00Z', '2026-03-30T06:00:00.000Z'],
    ['2026-03-26T07:30:00Z', '2026-03-27T07:00:00.000Z'],
    // Friday before fall-back (CEST) → Monday after it (CET).
    ['2026-10-23T06:00:00Z', '2026-10-26T07:00:00.000Z'],
  ])('after %s the next run is %s (08:00 Berlin time)', async (now, next) => {
    expect((await nextCronRun(weekdays8, 'Europe/Berlin', new Date(now)))!.toISOString()).toBe(next);
  });

  it('the store gives a new task that next run, and moves it across the change when it runs', async () => {
    const dir = await tempDir('tasks-dst');
    const store: AgentStore = await openAgentStore(dir);
    try {
      let now = new Date('2026-03-27T06:59:00Z');
      const tasks = new TaskStore(store, { max: 10, minIntervalMs: 300_000 }, { clock: () => now });
      const task = await tasks.create({ prompt: 'morning', cron: weekdays8, timezone: 'Europe/Berlin' });
      expect(task.next_run_at).toBe('2026-03-27T07:00:00.000Z');
      now = new Date('2026-03-27T07:00:01Z');
      expect((await tasks.claimDue()).map((t) => t.id)).toEqual([task.id]);
      expect((await tasks.get(task.id)).next_run_at).toBe('2026-03-30T06:00:00.000Z');
      // Claimed once: a second claim at the same time finds nothing due.
      expect(await tasks.claimDue()).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it('the minimum interval is checked over the coming days, not only the next two runs', async () => {
    const now = new Date('2026-03-27T12:00:00Z');
    await expect(checkCron('0 9 * * *', 'Europe/Berlin', now, 3_600_000)).resolves.toBeInstanceOf(Date);
    await expect(checkCron('0 9 * * 1', 'Europe/Berlin', now, 3_600_000)).resolves.toBeInstanceOf(Date);
    await expect(checkCron('0 9 * * 3 ', 'Europe/Berlin', now, 3_600_000)).resolves.toBeInstanceOf(Date);
    await expect(checkCron('0,30 9 * * 3', 'Europe/Berlin', now, 3_600_000)).rejects.toMatchObject({ appCode: 'INVALID_SCHEDULE' });
  });
});
