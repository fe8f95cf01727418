import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastUserText, toolResults } from '../support/scripted-model.js';
import { startTestAgent } from '../support/servers.js';
import { events, openSse, readFrames } from '../support/sse.js';
import { startChatRig, type ChatRig } from './helpers.js';

let rig: ChatRig;
beforeAll(async () => {
  rig = await startChatRig({ AGENT_NAME: 'Ada' });
});
afterAll(() => rig.stop());

describe('POST /chat', () => {
  it('streams model text as `text` events, then `done`, with SSE headers and ids', async () => {
    rig.model.queue({ text: ['Hel', 'lo ', 'there'] });
    const stream = await rig.post('plain', 'hi');
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(stream.headers.get('cache-control')).toContain('no-cache');
    expect(stream.headers.get('x-accel-buffering')).toBe('no');
    const frames = await readFrames(stream);
    expect(events(frames)).toEqual([{ type: 'text', content: 'Hel' }, { type: 'text', content: 'lo ' }, { type: 'text', content: 'there' }, { type: 'done' }]);
    const seqs = frames.map((f) => Number(f.id!.split('-')[1]));
    expect(seqs).toEqual([1, 2, 3, 4]);
    expect(new Set(frames.map((f) => f.id!.split('-')[0])).size).toBe(1);
  });

  it('sends a system prompt built from the workspace, and the chat history', async () => {
    await writeFile(path.join(rig.agent.workspace, 'SOUL.md'), 'You love tea.');
    rig.model.queue({ text: 'first answer' }, { text: 'second answer' });
    await rig.chat('ctx', 'first question');
    await rig.chat('ctx', 'second question');
    const request = rig.model.requests.at(-1)!;
    const system = request.messages[0]!;
    expect(system.role).toBe('system');
    expect(system.content).toContain('You are Ada');
    expect(system.content).toContain(new Date().toISOString().slice(0, 10));
    expect(system.content).toContain('You love tea.');
    expect(request.messages.slice(1).map((m) => [m.role, m.content])).toEqual([
      ['user', 'first question'],
      ['assistant', 'first answer'],
      ['user', 'second question'],
    ]);
    expect(request.tools!.map((t) => t.function.name).sort()).toEqual([
      'exec',
      'list_files',
      'read_file',
      'schedule_task',
      'search_history',
      'send_file',
      'spawn_subagent',
      'write_file',
    ]);
  });

  it('runs a tool round trip: tool_use event, result back to the model, then text', async () => {
    await writeFile(path.join(rig.agent.workspace, 'notes.txt'), 'the secret word is kiwi');
    rig.model.queue({ text: 'Let me look.', toolCalls: [{ name: 'read_file', args: { path: 'notes.txt' } }] }, { text: 'It says kiwi.' });
    const frames = await rig.chat('tools', 'what is in notes.txt?');
    expect(events(frames)).toEqual([
      { type: 'text', content: 'Let me look.' },
      { type: 'tool_use', name: 'read_file', input: '{"path":"notes.txt"}' },
      { type: 'text', content: 'It says kiwi.' },
      { type: 'done' },
    ]);
    const second = rig.model.requests.at(-1)!;
    expect(toolResults(second).at(-1)!.content).toContain('the secret word is kiwi');
  });

  it('writes files and sends them as `file` events (path and caption)', async () => {
    rig.model.queue(
      { toolCalls: [{ name: 'write_file', args: { path: 'out/report.md', content: '# Report' } }] },
      { toolCalls: [{ name: 'send_file', args: { path: 'out/report.md', caption: 'Your report' } }] },
      { text: 'Sent.' },
    );
    const frames = await rig.chat('files', 'make me a report');
    expect(events(frames)).toEqual([
      { type: 'tool_use', name: 'write_file', input: '{"path":"out/report.md","content":"# Report"}' },
      { type: 'tool_use', name: 'send_file', input: '{"path":"out/report.md","caption":"Your report"}' },
      { type: 'file', path: 'out/report.md', caption: 'Your report' },
      { type: 'text', content: 'Sent.' },
      { type: 'done' },
    ]);
    expect(await readFile(path.join(rig.agent.workspace, 'out/report.md'), 'utf8')).toBe('# Report');
  });

  it('reports a model failure as an `error` event, then `done`', async () => {
    rig.model.queue({ httpError: { status: 500, message: 'the model fell over' } });
    const frames = await rig.chat('fail', 'hi');
    expect(events(frames)).toEqual([{ type: 'error', content: expect.stringContaining('the model fell over') }, { type: 'done' }]);
    expect(JSON.stringify(frames)).not.toMatch(/at .*\.(ts|js):\d+/);
  });

  it('reports an error in the middle of a stream, keeping the partial text in history as cut', async () => {
    rig.model.queue({ text: ['part ', 'one'], streamError: 'overloaded' });
    const frames = await rig.chat('midfail', 'hi');
    expect(events(frames).map((e) => e.type)).toEqual(['text', 'text', 'error', 'done']);
    const { body } = await rig.get<{ messages: unknown[] }>('/chat/midfail/history');
    expect(body.messages).toEqual([
      { type: 'text', content: 'hi', name: 'user', message_id: expect.any(String) },
      { type: 'text', content: 'part one', cut: true },
    ]);
  });

  it('stops after the step bound', async () => {
    const bounded = await startChatRig({ AGENT_MAX_STEPS: '2' });
    try {
      bounded.model.respond(() => ({ toolCalls: [{ name: 'list_files', args: {} }] }));
      const frames = await bounded.chat('loop', 'loop forever');
      expect(events(frames).filter((e) => e.type === 'tool_use')).toHaveLength(2);
      expect(bounded.model.requests).toHaveLength(2);
      expect(frames.at(-1)!.data).toEqual({ type: 'done' });
    } finally {
      await bounded.stop();
    }
  });

  it('answers plainly when no model is configured', async () => {
    const bare = await startTestAgent();
    try {
      const stream = await openSse(`${bare.url}/chat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...bare.auth },
        body: JSON.stringify({ message: 'hello?', chat_id: 'c' }),
      });
      const frames = await readFrames(stream);
      expect(events(frames)).toEqual([{ type: 'text', content: expect.stringMatching(/no model is configured/i) }, { type: 'done' }]);
      const history = await fetch(`${bare.url}/chat/c/history`, { headers: bare.auth }).then((r) => r.json());
      expect(history).toEqual({
        messages: [
          { type: 'text', content: 'hello?', name: 'user', message_id: expect.any(String) },
          { type: 'text', content: expect.stringMatching(/no model/i) },
        ],
      });
    } finally {
      await bare.stop();
    }
  });

  it('keeps concurrent chats apart', async () => {
    rig.model.respond((request) => {
      const text = lastUserText(request);
      return { text: [`echo:`, text, ':end'], delayMs: 5 };
    });
    const ids = Array.from({ length: 12 }, (_, i) => `par-${i}`);
    const results = await Promise.all(ids.map((id) => rig.chat(id, `msg-${id}`)));
    for (const [i, frames] of results.entries()) {
      expect(events(frames)).toEqual([
        { type: 'text', content: 'echo:' },
        { type: 'text', content: `msg-${ids[i]}` },
        { type: 'text', content: ':end' },
        { type: 'done' },
      ]);
    }
    for (const id of ids) {
      const { body } = await rig.get<{ messages: unknown[] }>(`/chat/${id}/history`);
      expect(body.messages).toEqual([
        { type: 'text', content: `msg-${id}`, name: 'user', message_id: expect.any(String) },
        { type: 'text', content: `echo:msg-${id}:end` },
      ]);
    }
  });
});

describe('history, active, delete', () => {
  it('returns history entries oldest first: user text, assistant text, tool_use, file (path only)', async () => {
    const { status, body } = await rig.get('/chat/files/history');
    expect(status).toBe(200);
    expect(body).toEqual({
      messages: [
        { type: 'text', content: 'make me a report', name: 'user', message_id: expect.any(String) },
        { type: 'tool_use', name: 'write_file', input: '{"path":"out/report.md","content":"# Report"}' },
        { type: 'tool_use', name: 'send_file', input: '{"path":"out/report.md","caption":"Your report"}' },
        { type: 'file', path: 'out/report.md' },
        { type: 'text', content: 'Sent.' },
      ],
    });
  });

  it('honours limit: default 50, the last N entries, above 1000 clamped, below 1 or non-integer 400', async () => {
    rig.model.respond(() => ({ text: 'ok' }));
    for (let i = 0; i < 28; i++) await rig.chat('long', `m${i}`);
    const all = await rig.get<{ messages: Array<{ content: string }> }>('/chat/long/history');
    expect(all.body.messages).toHaveLength(50);
    expect(all.body.messages.at(-2)!.content).toBe('m27');
    const three = await rig.get<{ messages: Array<{ content: string }> }>('/chat/long/history?limit=3');
    expect(three.body.messages.map((m) => m.content)).toEqual(['ok', 'm27', 'ok']);
    const huge = await rig.get<{ messages: unknown[] }>('/chat/long/history?limit=5000');
    expect(huge.status).toBe(200);
    expect(huge.body.messages).toHaveLength(56);
    for (const bad of ['0', '-1', '1.5', 'abc', '']) {
      const res = await rig.get<{ code: string }>(`/chat/long/history?limit=${bad}`);
      expect(res.status, `limit=${bad}`).toBe(400);
      expect(res.body.code).toBe('VALIDATION_FAILED');
    }
  });

  it('answers an unknown chat with an empty history', async () => {
    expect(await rig.get('/chat/never-seen/history')).toEqual({ status: 200, body: { messages: [] } });
  });

  it('reports the active run', async () => {
    expect(await rig.get('/chat/idle/active')).toEqual({ status: 200, body: { active: false, user_message: '' } });
    rig.model.queue({ text: ['slow'], hang: true });
    const stream = await rig.post('busy', 'are you there?');
    const first = await stream.frames.next();
    expect(first.value?.data).toEqual({ type: 'text', content: 'slow' });
    expect(await rig.get('/chat/busy/active')).toEqual({ status: 200, body: { active: true, user_message: 'are you there?' } });
    await rig.del('/chat/busy');
    stream.close();
    expect((await rig.get('/chat/busy/active')).body).toEqual({ active: false, user_message: '' });
  });

  it('DELETE empties the history and answers {status, deleted}', async () => {
    const before = await rig.get<{ messages: unknown[] }>('/chat/tools/history');
    const res = await rig.del('/chat/tools');
    expect(res).toEqual({ status: 200, body: { status: 'ok', deleted: before.body.messages.length } });
    expect((await rig.get('/chat/tools/history')).body).toEqual({ messages: [] });
    expect(await rig.del('/chat/tools')).toEqual({ status: 200, body: { status: 'ok', deleted: 0 } });
  });
});

describe('OpenAPI', () => {
  it('documents the five chat paths', async () => {
    const { body } = await rig.get<{ paths: Record<string, Record<string, unknown>> }>('/openapi.json');
    expect(Object.keys(body.paths['/chat']!)).toEqual(['post']);
    expect(Object.keys(body.paths['/chat/{chat_id}/active']!)).toEqual(['get']);
    expect(Object.keys(body.paths['/chat/{chat_id}/stream']!)).toEqual(['get']);
    expect(Object.keys(body.paths['/chat/{chat_id}/history']!)).toEqual(['get']);
    expect(Object.keys(body.paths['/chat/{chat_id}']!)).toEqual(['delete']);
  });
});

describe('hostile input', () => {
  const post = (body: unknown) =>
    fetch(`${rig.agent.url}/chat`, { method: 'POST', headers: { 'content-type': 'application/json', ...rig.agent.auth }, body: JSON.stringify(body) });

  it.each([
    ['empty message', { message: '', chat_id: 'h' }, 'message'],
    ['blank message', { message: '  \n\t ', chat_id: 'h' }, 'message'],
    ['oversized message', { message: 'x'.repeat(32_001), chat_id: 'h' }, 'message'],
    ['message not a string', { message: { $gt: '' }, chat_id: 'h' }, 'message'],
    ['missing chat_id', { message: 'hi' }, 'chat_id'],
    ['chat_id too long', { message: 'hi', chat_id: 'c'.repeat(129) }, 'chat_id'],
    ['chat_id with a slash', { message: 'hi', chat_id: '../etc' }, 'chat_id'],
    ['chat_id with spaces', { message: 'hi', chat_id: 'a b' }, 'chat_id'],
    ['chat_id with a NUL', { message: 'hi', chat_id: 'a\u0000b' }, 'chat_id'],
    ['chat_id not a string', { message: 'hi', chat_id: 42 }, 'chat_id'],
  ])('refuses %s with 400', async (_name, body, field) => {
    const res = await post(body);
    expect(res.status).toBe(400);
    const error = (await res.json()) as { code: string; issues: Array<{ path: string }> };
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.issues.map((i) => i.path)).toContain(field);
  });

  it('accepts a message at the bound', async () => {
    rig.model.queue({ text: 'long one' });
    const frames = await rig.chat('bound', 'y'.repeat(32_000));
    expect(events(frames).at(-1)).toEqual({ type: 'done' });
  });

  it.each(['a%20b', 'a%2Fb', 'x'.repeat(129), '%00'])('refuses the path chat_id %s with 400', async (id) => {
    for (const suffix of ['/history', '/active', '/stream', '']) {
      const res = await fetch(`${rig.agent.url}/chat/${id}${suffix}`, { method: suffix === '' ? 'DELETE' : 'GET', headers: rig.agent.auth });
      expect([400, 404], `${id}${suffix}`).toContain(res.status);
      const body = (await res.json()) as { code: string };
      expect(body.code).toMatch(/VALIDATION_FAILED|ROUTE_NOT_FOUND/);
    }
  });

  it('needs the agent secret on every chat path', async () => {
    for (const [method, p] of [
      ['GET', '/chat/x/history'],
      ['GET', '/chat/x/active'],
      ['GET', '/chat/x/stream'],
      ['DELETE', '/chat/x'],
    ] as const) {
      const res = await fetch(`${rig.agent.url}${p}`, { method });
      expect(res.status, `${method} ${p}`).toBe(401);
      expect(await res.json()).toMatchObject({ code: 'INVALID_AGENT_SECRET' });
    }
  });

  it('does not let tools leave the workspace, reporting the refusal to the model', async () => {
    const outside = path.join(path.dirname(rig.agent.workspace), `outside-${Date.now()}.txt`);
    await mkdir(path.join(rig.agent.workspace, 'sub'), { recursive: true });
    await writeFile(path.join(rig.agent.workspace, '.env'), 'SECRET=1');
    const attempts = [
      { name: 'read_file', args: { path: '../../etc/passwd' } },
      { name: 'read_file', args: { path: '/etc/passwd' } },
      { name: 'read_file', args: { path: '.env' } },
      { name: 'read_file', args: { path: 'sub/../agent.db' } },
      { name: 'read_file', args: { path: 'AGENT.DB-wal' } },
      { name: 'write_file', args: { path: `../${path.basename(outside)}`, content: 'x' } },
      { name: 'write_file', args: { path: 'sub/.env.local', content: 'x' } },
      { name: 'list_files', args: { path: '..' } },
      { name: 'send_file', args: { path: '../../../etc/hostname' } },
      { name: 'read_file', args: { path: 'a\u0000b' } },
    ];
    rig.model.queue({ toolCalls: attempts }, { text: 'I could not.' });
    const frames = await rig.chat('escape', 'break out');
    expect(events(frames).filter((e) => e.type === 'tool_use')).toHaveLength(attempts.length);
    expect(events(frames).some((e) => e.type === 'file')).toBe(false);
    const results = toolResults(rig.model.requests.at(-1)!);
    expect(results).toHaveLength(attempts.length);
    for (const result of results) expect(result.content).toMatch(/escapes the workspace|Absolute paths|protected file|NUL/);
    await expect(readFile(outside)).rejects.toThrow();
    expect(await readFile(path.join(rig.agent.workspace, '.env'), 'utf8')).toBe('SECRET=1');
  });
});
