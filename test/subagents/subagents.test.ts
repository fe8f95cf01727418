/**
 * Subagents over REST, driven by the scripted model: spawn → completed (result, pending message),
 * model error → failed, slow → timeout, stop → cancelled, stop twice → 409, unknown → 404,
 * limits, ordering, retention purge (time injected), fields exactly as documented.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { finishRun, insertRun, RESULT_PREVIEW_CHARS } from '../../server/agent/subagents/runs.js';
import { toolResults } from '../support/scripted-model.js';
import { startChatRig, until, type ChatRig } from '../chat/helpers.js';
import { isSubagent, post, spawnResults, spawnVia, systemText, waitForStatus } from './helpers.js';

const SUMMARY_KEYS = ['chat_id', 'completed_at', 'duration', 'error', 'id', 'label', 'result_preview', 'started_at', 'status', 'task'];
const DETAIL_KEYS = ['chat_id', 'completed_at', 'duration', 'error', 'id', 'label', 'persona', 'result', 'started_at', 'status', 'task'];
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?$/;

type Pending = { chat_id: string; content: string; source: string; created_at: string };

let rig: ChatRig;
beforeAll(async () => {
  rig = await startChatRig({ SUBAGENT_MAX_RUNNING: '3' });
});
afterAll(() => rig.stop());

async function collectPending(): Promise<Pending[]> {
  return (await rig.get<{ messages: Pending[] }>('/pending')).body.messages;
}

describe('spawn_subagent', () => {
  it('starts a background run that completes with its result, announced as a pending message', async () => {
    await collectPending();
    const [id] = await spawnVia(rig, 'c1', [{ label: 'research', task: 'Find the answer.', persona: 'A terse librarian.' }], () => ({
      text: ['The answer ', 'is 42.'],
    }));
    expect(id).toMatch(/^[0-9a-f]{12}$/);
    expect(spawnResults(rig)[0]).toMatchObject({ run_id: id, status: 'running', message: expect.stringContaining(id!) });

    const detail = await waitForStatus(rig, id!, 'completed');
    expect(Object.keys(detail).sort()).toEqual(DETAIL_KEYS);
    expect(detail).toMatchObject({
      id,
      label: 'research',
      task: 'Find the answer.',
      persona: 'A terse librarian.',
      status: 'completed',
      chat_id: 'c1',
      result: 'The answer is 42.',
      error: null,
    });
    expect(detail.started_at).toEqual(expect.any(Number));
    expect(detail.completed_at as number).toBeGreaterThanOrEqual(detail.started_at as number);
    expect(detail.duration).toBeCloseTo((detail.completed_at as number) - (detail.started_at as number), 2);
    expect(Math.abs((detail.started_at as number) - Date.now() / 1000)).toBeLessThan(60);

    const list = (await rig.get<{ subagents: Array<Record<string, unknown>> }>('/subagents')).body.subagents;
    const summary = list.find((s) => s.id === id)!;
    expect(Object.keys(summary).sort()).toEqual(SUMMARY_KEYS);
    expect(summary).toMatchObject({ status: 'completed', result_preview: 'The answer is 42.', error: null, chat_id: 'c1' });

    await until(async () => (await rig.agent.services.pending.count()) > 0);
    const pending = await collectPending();
    expect(pending).toEqual([
      { chat_id: 'c1', source: 'subagent', content: expect.stringContaining('The answer is 42.'), created_at: expect.stringMatching(TIMESTAMP) },
    ]);
    expect(pending[0]!.content).toContain(id);
    expect(await collectPending()).toEqual([]);
  });

  it('gives the subagent its own context: task and persona, not the parent history; no spawn_subagent, no send_file', async () => {
    const subRequest = rig.model.requests.find(isSubagent)!;
    expect(subRequest.messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(subRequest.messages[1]!.content).toBe('Find the answer.');
    expect(systemText(subRequest)).toContain('A terse librarian.');
    expect(JSON.stringify(subRequest.messages)).not.toContain('please delegate');
    const subTools = (subRequest.tools ?? []).map((t) => t.function.name).sort();
    expect(subTools).toEqual(['exec', 'list_files', 'read_file', 'write_file']);
    const parentRequest = rig.model.requests.find((r) => !isSubagent(r))!;
    expect((parentRequest.tools ?? []).map((t) => t.function.name)).toContain('spawn_subagent');
  });

  it('bounds result_preview; the detail has the full result', async () => {
    const long = 'x'.repeat(5000);
    const [id] = await spawnVia(rig, 'c1', [{ label: 'long', task: 'Write a lot.' }], () => ({ text: long }));
    await waitForStatus(rig, id!, 'completed');
    const summary = (await rig.get<{ subagents: Array<Record<string, unknown>> }>('/subagents')).body.subagents.find((s) => s.id === id)!;
    expect((summary.result_preview as string).length).toBeLessThanOrEqual(RESULT_PREVIEW_CHARS);
    expect((summary.result_preview as string).endsWith('…')).toBe(true);
    expect((await rig.get<{ result: string }>(`/subagents/${id}`)).body.result).toBe(long);
    await collectPending();
  });

  it('a model error fails the run (status failed, the error kept) and announces the failure', async () => {
    const [id] = await spawnVia(rig, 'c2', [{ label: 'doomed', task: 'Fail.' }], () => ({ httpError: { status: 500, message: 'scripted failure' } }));
    const detail = await waitForStatus(rig, id!, 'failed');
    expect(detail.error).toContain('scripted failure');
    expect(detail.completed_at).toEqual(expect.any(Number));
    await until(async () => (await rig.agent.services.pending.count()) > 0);
    const [message] = await collectPending();
    expect(message).toMatchObject({ chat_id: 'c2', source: 'subagent', content: expect.stringContaining('failed') });
  });

  it('a slow run ends with status timeout after its timeout', async () => {
    const [id] = await spawnVia(rig, 'c3', [{ label: 'slow', task: 'Take forever.', timeout_seconds: 0.3 }], () => ({ text: 'thinking…', hang: true }));
    const detail = await waitForStatus(rig, id!, 'timeout');
    expect(detail.error).toBe('timed out after 0.3 s');
    expect(detail.duration as number).toBeGreaterThanOrEqual(0.3);
    await until(() => rig.model.openStreams() === 0);
    await until(async () => (await rig.agent.services.pending.count()) > 0);
    expect((await collectPending())[0]).toMatchObject({ chat_id: 'c3', source: 'subagent', content: expect.stringContaining('timed out') });
  });
});

describe('stop', () => {
  it('cancels a running run: failed with error cancelled, the response names it; a second stop is 409', async () => {
    const [id] = await spawnVia(rig, 'c4', [{ label: 'endless', task: 'Never stop.' }], () => ({ text: 'working', hang: true }));
    await until(() => rig.model.openStreams() === 1);
    const running = (await rig.get<Record<string, unknown>>(`/subagents/${id}`)).body;
    expect(running).toMatchObject({ status: 'running', completed_at: null, result: null, error: null });

    const stopped = await post<Record<string, unknown>>(rig, `/subagents/${id}/stop`);
    expect(stopped.status).toBe(200);
    expect(stopped.body).toEqual({ status: 'ok', run_id: id, message: expect.stringContaining(id!) });
    expect(stopped.body.message).toContain('endless');
    const detail = (await rig.get<Record<string, unknown>>(`/subagents/${id}`)).body;
    expect(detail).toMatchObject({ status: 'failed', error: 'cancelled', completed_at: expect.any(Number) });
    await until(() => rig.model.openStreams() === 0);

    const again = await post(rig, `/subagents/${id}/stop`);
    expect(again).toEqual({ status: 409, body: { detail: expect.any(String), code: 'SUBAGENT_NOT_RUNNING' } });
    const [message] = await collectPending();
    expect(message).toMatchObject({ chat_id: 'c4', source: 'subagent', content: expect.stringContaining('stopped') });
    expect(await collectPending()).toEqual([]);
  });

  it('concurrent stops of one run: exactly one 200, the rest 409, one announcement', async () => {
    const [id] = await spawnVia(rig, 'c5', [{ label: 'raced', task: 'Wait.' }], () => ({ text: 'working', hang: true }));
    await until(() => rig.model.openStreams() === 1);
    const answers = await Promise.all(Array.from({ length: 5 }, () => post(rig, `/subagents/${id}/stop`)));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409, 409, 409, 409]);
    await until(() => rig.model.openStreams() === 0);
    expect(await collectPending()).toHaveLength(1);
  });

  it('stop of a completed run is 409; an unknown id is 404; a malformed id is 400', async () => {
    const done = (await rig.get<{ subagents: Array<{ id: string; status: string }> }>('/subagents')).body.subagents.find((s) => s.status === 'completed')!;
    expect((await post(rig, `/subagents/${done.id}/stop`)).status).toBe(409);
    expect(await post(rig, '/subagents/000000000000/stop')).toEqual({ status: 404, body: { detail: expect.any(String), code: 'SUBAGENT_NOT_FOUND' } });
    expect(await rig.get('/subagents/000000000000')).toEqual({ status: 404, body: { detail: expect.any(String), code: 'SUBAGENT_NOT_FOUND' } });
    expect((await rig.get(`/subagents/${'a'.repeat(65)}`)).status).toBe(400);
    expect((await rig.get('/subagents/a%20b')).status).toBe(400);
  });

  it('needs the agent secret', async () => {
    expect((await fetch(`${rig.agent.url}/subagents`)).status).toBe(401);
    expect((await fetch(`${rig.agent.url}/subagents/x/stop`, { method: 'POST' })).status).toBe(401);
  });
});

describe('limits', () => {
  it('at most SUBAGENT_MAX_RUNNING run at once: the tool refuses the next one and says why', async () => {
    const spawns = ['a', 'b', 'c', 'd'].map((label) => ({ label, task: `Task ${label}.` }));
    const ids = await spawnVia(rig, 'c6', spawns, () => ({ text: 'working', hang: true }));
    expect(ids).toHaveLength(3);
    const refused = spawnResults(rig).find((r) => !r.run_id)!;
    expect(refused.raw).toContain('Too many subagents are running (3 of at most 3)');
    expect(rig.agent.services.subagents.running()).toBe(3);
    for (const id of ids) expect((await post(rig, `/subagents/${id}/stop`)).status).toBe(200);
    await until(() => rig.agent.services.subagents.running() === 0 && rig.model.openStreams() === 0);
    await collectPending();
  });

  it('no nesting: a subagent (depth 1) is refused, and subagents are not given the tool', async () => {
    await expect(rig.agent.services.subagents.spawn({ label: 'nested', task: 'x', chatId: 'c7', depth: 1 })).rejects.toMatchObject({
      appCode: 'SUBAGENT_DEPTH',
      message: expect.stringContaining('cannot start subagents'),
    });
    const subTools = rig.model.requests.filter(isSubagent).flatMap((r) => (r.tools ?? []).map((t) => t.function.name));
    expect(subTools).not.toContain('spawn_subagent');
  });

  it('the refusal reaches the model as the tool result', async () => {
    const results = rig.model.requests.filter((r) => !isSubagent(r)).flatMap(toolResults);
    expect(results.some((r) => r.content.includes('none was started'))).toBe(true);
  });
});

describe('list and retention', () => {
  it('lists running runs first, then by start time, newest first', async () => {
    const { db } = rig.agent.services.store;
    await db.subagentRun.deleteMany();
    const base = Date.now() - 10 * 60_000;
    const at = (minutes: number) => new Date(base + minutes * 60_000);
    await insertRun(db, { id: 'old-running', label: 'a', task: 't', persona: '', chatId: 'x', now: at(0) });
    await insertRun(db, { id: 'done-1', label: 'b', task: 't', persona: '', chatId: 'x', now: at(1) });
    await insertRun(db, { id: 'new-running', label: 'c', task: 't', persona: '', chatId: 'x', now: at(2) });
    await insertRun(db, { id: 'done-2', label: 'd', task: 't', persona: '', chatId: 'x', now: at(3) });
    await finishRun(db, 'done-1', { status: 'completed', result: 'r', now: at(4) });
    await finishRun(db, 'done-2', { status: 'timeout', error: 'timed out', now: at(5) });
    const list = (await rig.get<{ subagents: Array<{ id: string; duration: number }> }>('/subagents')).body.subagents;
    expect(list.map((s) => s.id)).toEqual(['new-running', 'old-running', 'done-2', 'done-1']);
    expect(list.find((s) => s.id === 'done-1')!.duration).toBe(180);
    expect(list.find((s) => s.id === 'old-running')!.duration).toBeGreaterThanOrEqual(600);
    await db.subagentRun.deleteMany();
  });

  it('purges finished runs one hour after they ended (time injected); running runs stay', async () => {
    const { db } = rig.agent.services.store;
    // Ended 29 minutes ago by the real clock (so the periodic purge leaves it), judged at injected times.
    const t0 = new Date(Date.now() - 30 * 60_000);
    await insertRun(db, { id: 'kept-running', label: 'a', task: 't', persona: '', chatId: 'x', now: t0 });
    await insertRun(db, { id: 'ended', label: 'b', task: 't', persona: '', chatId: 'x', now: t0 });
    await finishRun(db, 'ended', { status: 'completed', result: 'r', now: new Date(t0.getTime() + 60_000) });
    const endedAt = t0.getTime() + 60_000;
    expect(await rig.agent.services.subagents.purge(new Date(endedAt + 3600_000 - 1))).toBe(0);
    expect(await rig.agent.services.subagents.purge(new Date(endedAt + 3600_000 + 1))).toBe(1);
    expect((await rig.get('/subagents/ended')).status).toBe(404);
    expect((await rig.get<{ status: string }>('/subagents/kept-running')).body.status).toBe('running');
    await db.subagentRun.deleteMany();
  });

  it('the listing itself never shows an expired run (purged on read, with the real clock)', async () => {
    const { db } = rig.agent.services.store;
    const long = new Date(Date.now() - 2 * 3600_000);
    await insertRun(db, { id: 'ancient', label: 'a', task: 't', persona: '', chatId: 'x', now: long });
    await finishRun(db, 'ancient', { status: 'failed', error: 'x', now: long });
    expect((await rig.get<{ subagents: unknown[] }>('/subagents')).body.subagents).toEqual([]);
    expect(await db.subagentRun.count()).toBe(0);
  });
});
