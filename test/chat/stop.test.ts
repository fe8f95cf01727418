/**
 * `POST /chat/{chat_id}/stop` over real HTTP with the scripted model: the model call is aborted,
 * a running exec is killed, the stream and history end with `error` "stopped", and the answers
 * for no run, an unknown chat, a missing secret and malformed ids are the documented ones.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { events, readFrames, type SseStream } from '../support/sse.js';
import { startChatRig, until, type ChatRig } from './helpers.js';

let rig: ChatRig;
beforeAll(async () => {
  // An exec timeout far beyond the test: only the stop can end the command in time.
  rig = await startChatRig({ AGENT_EXEC_TIMEOUT: '120' });
});
afterAll(() => rig.stop());

const stop = (chatId: string, init: RequestInit = {}) =>
  fetch(`${rig.agent.url}/chat/${chatId}/stop`, {
    method: 'POST',
    ...init,
    headers: { ...rig.agent.auth, ...(init.headers as Record<string, string> | undefined) },
  });

/** Reads the stream until `n` text events have arrived. */
const readTexts = (stream: SseStream, n: number) => readFrames(stream, (_f, all) => all.filter((f) => f.data.type === 'text').length >= n);

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('POST /chat/{chat_id}/stop', () => {
  it('aborts the model call; the stream ends with error "stopped" and history keeps the partial reply', async () => {
    rig.model.queue({ text: ['Once ', 'upon '], hang: true });
    const stream = await rig.post('story', 'tell me a story');
    const before = await readTexts(stream, 2);
    expect(rig.model.openStreams()).toBe(1);

    const res = await stop('story');
    expect(res.status).toBe(204);
    expect(await res.text()).toBe('');

    const after = await readFrames(stream);
    expect(events([...before, ...after])).toEqual([
      { type: 'text', content: 'Once ' },
      { type: 'text', content: 'upon ' },
      { type: 'error', content: 'stopped' },
      { type: 'done' },
    ]);
    // The provider's HTTP response was cut: the model sees its client go away.
    await until(() => rig.model.openStreams() === 0);
    // The stop answers once history is written, so it reads as the stream did.
    expect((await rig.get('/chat/story/history')).body).toEqual({
      messages: [
        { type: 'text', content: 'tell me a story', name: 'user', message_id: expect.any(String) },
        { type: 'text', content: 'Once upon ', cut: true },
        { type: 'error', content: 'stopped' },
      ],
    });
    expect((await rig.get('/chat/story/active')).body).toEqual({ active: false, user_message: '' });

    // The chat goes on: the next message runs, with the stopped reply in the model's context.
    rig.model.queue({ text: 'The end.' });
    expect(events(await rig.chat('story', 'finish it')).at(-2)).toEqual({ type: 'text', content: 'The end.' });
    const context = rig.model.requests.at(-1)!.messages.map((m) => m.content);
    expect(context).toContain('Once upon  …(interrupted)');
  });

  it('is marked even when nothing was said yet', async () => {
    rig.model.queue({ hang: true });
    const stream = await rig.post('silent', 'think hard');
    await until(() => rig.model.openStreams() === 1);
    expect((await stop('silent')).status).toBe(204);
    const tail = events(await readFrames(stream));
    expect(tail.slice(-2)).toEqual([{ type: 'error', content: 'stopped' }, { type: 'done' }]);
    expect((await rig.get<{ messages: unknown[] }>('/chat/silent/history')).body.messages).toEqual([
      { type: 'text', content: 'think hard', name: 'user', message_id: expect.any(String) },
      { type: 'error', content: 'stopped' },
    ]);
  });

  it('kills a running exec (its whole process group) and never hands a result back to the model', async () => {
    const command = 'echo $$ > pid.txt; exec sleep 300';
    rig.model.queue({ toolCalls: [{ name: 'exec', args: { command } }] });
    const requests = rig.model.requests.length;
    const stream = await rig.post('tool', 'run it');
    const pidFile = path.join(rig.agent.workspace, 'pid.txt');
    let pid = 0;
    await until(async () => {
      pid = Number((await readFile(pidFile, 'utf8').catch(() => '')).trim());
      return pid > 0;
    });
    expect(alive(pid)).toBe(true);

    expect((await stop('tool')).status).toBe(204);
    expect(events(await readFrames(stream))).toEqual([
      { type: 'tool_use', name: 'exec', input: JSON.stringify({ command }) },
      { type: 'error', content: 'stopped' },
      { type: 'done' },
    ]);
    await until(() => !alive(pid), 3_000);
    expect(rig.model.requests.length).toBe(requests + 1);
  });

  it('answers 409 RUN_NOT_ACTIVE when no run is active, 404 CHAT_NOT_FOUND for a chat never used', async () => {
    rig.model.queue({ text: 'done already' });
    await rig.chat('finished', 'hi');
    const again = await stop('finished');
    expect(again.status).toBe(409);
    expect(await again.json()).toEqual({ detail: expect.any(String), code: 'RUN_NOT_ACTIVE' });
    // History is untouched by a refused stop.
    expect((await rig.get<{ messages: unknown[] }>('/chat/finished/history')).body.messages).toHaveLength(2);

    const unknown = await stop('never-used');
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ detail: expect.any(String), code: 'CHAT_NOT_FOUND' });
  });

  it('a second stop racing the first: one 204, one 409', async () => {
    rig.model.queue({ text: ['x'], hang: true });
    const stream = await rig.post('twice', 'go');
    await readTexts(stream, 1);
    const statuses = (await Promise.all([stop('twice'), stop('twice')])).map((r) => r.status).sort();
    expect(statuses).toEqual([204, 409]);
    expect(events(await readFrames(stream)).filter((e) => e.type === 'error')).toEqual([{ type: 'error', content: 'stopped' }]);
  });
});

describe('stop: hostile input', () => {
  it('needs the agent secret, and a wrong one does not stop the run', async () => {
    rig.model.queue({ text: ['a'], hang: true });
    const stream = await rig.post('guarded', 'go');
    await readTexts(stream, 1);
    for (const authorization of [undefined, 'Bearer wrong-secret', `Bearer ${rig.agent.secret}x`, rig.agent.secret]) {
      const res = await fetch(`${rig.agent.url}/chat/guarded/stop`, { method: 'POST', headers: authorization ? { authorization } : {} });
      expect(res.status, String(authorization)).toBe(401);
      expect(await res.json()).toMatchObject({ code: 'INVALID_AGENT_SECRET' });
    }
    expect((await rig.get('/chat/guarded/active')).body).toEqual({ active: true, user_message: 'go' });
    expect((await stop('guarded')).status).toBe(204);
    await readFrames(stream);
  });

  it('takes the chat from the path only: a chat_id in the body does not redirect the stop', async () => {
    rig.model.queue({ text: ['a'], hang: true });
    const stream = await rig.post('target', 'go');
    await readTexts(stream, 1);
    const res = await stop('bystander', { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ chat_id: 'target' }) });
    expect(res.status).toBe(404);
    expect((await rig.get('/chat/target/active')).body).toMatchObject({ active: true });
    expect((await stop('target')).status).toBe(204);
    await readFrames(stream);
  });

  it.each(['a%20b', 'a%2Fb', '..%2F..%2Fetc', 'x'.repeat(129), '%00', 'a%3Bb'])('refuses the chat id %s with 400', async (id) => {
    const res = await stop(id);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 'VALIDATION_FAILED' });
  });

  it('refuses a body that is not a JSON object, and other methods with 405', async () => {
    const text = await stop('x', { headers: { 'content-type': 'text/plain' }, body: 'stop' });
    expect(text.status).toBe(415);
    const array = await stop('x', { headers: { 'content-type': 'application/json' }, body: '[]' });
    expect(array.status).toBe(400);
    const get = await fetch(`${rig.agent.url}/chat/x/stop`, { headers: rig.agent.auth });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
  });

  it('is in the OpenAPI document', async () => {
    const { body } = await rig.get<{ paths: Record<string, Record<string, { responses: Record<string, unknown> }>> }>('/openapi.json');
    expect(Object.keys(body.paths['/chat/{chat_id}/stop']!)).toEqual(['post']);
  });
});
