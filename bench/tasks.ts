/**
 * `npm run bench:tasks`: what a recurring task costs in model tokens, measured where the budget
 * counts them (the egress gateway's meter, by source: `GET /account` `usage.model_tokens.by_source`).
 * The product as `npm start` runs it (sandboxed local agent, scripted model on loopback reporting
 * fixed usage per call): a guest chats once, then schedules `* * * * *` (TASK_MIN_INTERVAL a
 * minute for the run), and the agent runs it BENCH_TASK_RUNS times (3; 2 with BENCH_QUICK=1) while
 * heartbeats tick every two seconds with no HEARTBEAT.md. Over that window, per source:
 *   - `task` must equal exactly the sum of the task turns' own usage (what the model reported for
 *     each call whose message is the task's), and
 *   - `chat`, `heartbeat` and `subagent` must not grow at all: an idle heartbeat without
 *     HEARTBEAT.md spends nothing, and a task's turn carries nothing of anyone else's.
 * The figures are printed side by side with what the model reported; the bench fails when they differ.
 */
import { rm } from 'node:fs/promises';
import { lastUserText, startScriptedModel } from '../test/support/scripted-model.js';
import { startAccountService } from './lib/account.js';
import { loadAverage, runIfEntry, stop, table } from './lib/harness.js';

const QUICK = process.env.BENCH_QUICK === '1';
const RUNS = Math.max(1, Number(process.env.BENCH_TASK_RUNS ?? (QUICK ? 2 : 3)));
/** What the scripted model reports for each call: a task turn's input is its prompt and context, its output the answer. */
const TURN_USAGE = { prompt_tokens: 812, completion_tokens: 47 };
const CHAT_USAGE = { prompt_tokens: 500, completion_tokens: 20 };
const SOURCES = ['chat', 'heartbeat', 'task', 'subagent'] as const;
type Source = (typeof SOURCES)[number];
type BySource = Record<Source, number>;

export interface TasksResults {
  date: string;
  runs: number;
  heartbeatIntervalSeconds: number;
  windowSeconds: number;
  /** Tokens the meter counted per source during the window. */
  metered: BySource;
  /** Tokens the model reported for the task turns' calls (what `task` must equal), and those calls. */
  taskTurns: { calls: number; tokens: number };
  /** Model calls during the window that were not a task's. */
  otherCalls: number;
  loadAverage: { start: number[]; end: number[] };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function tasksBench(): Promise<TasksResults> {
  const isTask = (text: string) => text.startsWith('[Scheduled task]');
  const model = await startScriptedModel({
    responder: (request) => (isTask(lastUserText(request)) ? { text: ['Reminder: ', 'stretch.'], usage: TURN_USAGE } : { text: 'Hello.', usage: CHAT_USAGE }),
  });
  const heartbeatSeconds = 2;
  const service = await startAccountService({
    MODEL: model.modelSpec,
    AGENT_PROVISIONER: 'local',
    AGENT_IDLE_TIMEOUT: '0',
    AGENT_WARM_POOL: '0',
    HEARTBEAT_INTERVAL: String(heartbeatSeconds),
    TASK_MIN_INTERVAL_GUEST: '60',
  });
  const startLoad = loadAverage();
  try {
    const signIn = await fetch(`${service.url}/api/v1/auth/guest`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ device_id: `bench-tasks-${Date.now().toString(36)}.bench-device` }),
    });
    const { access_token: token } = (await signIn.json()) as { access_token: string };
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const bySource = async (): Promise<BySource> =>
      ((await (await fetch(`${service.url}/api/v1/account`, { headers })).json()) as { usage: { model_tokens: { by_source: BySource } } }).usage.model_tokens
        .by_source;
    // A chat first, so that the heartbeat has a chat it could report to (and would spend, had it a file).
    await (await fetch(`${service.url}/api/v1/agent/chat`, { method: 'POST', headers, body: JSON.stringify({ message: 'hello', chat_id: 'main' }) })).text();
    const before = await bySource();
    const firstCall = model.requests.length;
    const started = Date.now();
    const created = await fetch(`${service.url}/api/v1/agent/tasks`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ prompt: 'Remind me to stretch', cron: '* * * * *', chat_id: 'main' }),
    });
    if (created.status !== 201) throw new Error(`creating the task: ${created.status} ${await created.text()}`);
    const { id } = (await created.json()) as { id: string };
    const taskCalls = () => model.requests.slice(firstCall).filter((request) => isTask(lastUserText(request))).length;
    for (const deadline = Date.now() + (RUNS + 1) * 60_000 + 30_000; taskCalls() < RUNS; await sleep(500)) {
      if (Date.now() > deadline) throw new Error(`only ${taskCalls()} of ${RUNS} task runs in time`);
    }
    // Stop it before a further run, and let the last turn's usage settle in the meter.
    await fetch(`${service.url}/api/v1/agent/tasks/${id}`, { method: 'DELETE', headers });
    await sleep(3_000);
    const after = await bySource();
    const window = model.requests.slice(firstCall);
    const calls = window.filter((request) => isTask(lastUserText(request))).length;
    const metered = Object.fromEntries(SOURCES.map((source) => [source, after[source] - before[source]])) as BySource;
    return {
      date: new Date().toISOString(),
      runs: RUNS,
      heartbeatIntervalSeconds: heartbeatSeconds,
      windowSeconds: Math.round((Date.now() - started) / 1000),
      metered,
      taskTurns: { calls, tokens: calls * (TURN_USAGE.prompt_tokens + TURN_USAGE.completion_tokens) },
      otherCalls: window.length - calls,
      loadAverage: { start: startLoad, end: loadAverage() },
    };
  } finally {
    await stop(service.child);
    await rm(service.dataDir, { recursive: true, force: true });
    await model.close();
  }
}

export function printTasksTables(results: TasksResults): void {
  console.log(
    `\n== a recurring task's model tokens: ${results.runs} runs of "* * * * *" in ${results.windowSeconds} s, heartbeats every ${results.heartbeatIntervalSeconds} s without HEARTBEAT.md`,
  );
  const expected: BySource = { chat: 0, heartbeat: 0, task: results.taskTurns.tokens, subagent: 0 };
  console.log(
    table(
      ['source', 'metered tokens', 'the turns’ own tokens', 'difference'],
      SOURCES.map((source) => [source, results.metered[source], expected[source], results.metered[source] - expected[source]]),
    ),
  );
  console.log(`model calls in the window: ${results.taskTurns.calls} task turns, ${results.otherCalls} others`);
  const exact = SOURCES.every((source) => results.metered[source] === expected[source]) && results.otherCalls === 0 && results.taskTurns.calls >= results.runs;
  console.log(exact ? 'task tokens = the task turns’ own, every other source +0: exact' : 'MISMATCH: the task cost more than its own turns');
  if (!exact) process.exitCode = 1;
}

await runIfEntry(import.meta.url, 'tasks.json', tasksBench, printTasksTables);
