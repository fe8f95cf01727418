/**
 * The heartbeat, driven by the scripted model: missing or empty HEARTBEAT.md → no model call;
 * HEARTBEAT_OK → nothing; an alert → one pending message for the most recently active chat;
 * no overlap with itself nor with the user's run in that chat; the interval timer.
 */
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HEARTBEAT_OK, isHeartbeatOk } from '../../server/agent/heartbeat/run.js';
import { lastUserText, type ModelRequest } from '../support/scripted-model.js';
import { readFrames } from '../support/sse.js';
import { sleep, startChatRig, until, type ChatRig } from '../chat/helpers.js';

type Pending = { chat_id: string; content: string; source: string; created_at: string };

const isHeartbeat = (r: ModelRequest) => lastUserText(r).startsWith('Heartbeat (');

let rig: ChatRig;
beforeAll(async () => {
  rig = await startChatRig({ HEARTBEAT_WAIT: '5' });
});
afterAll(() => rig.stop());

const heartbeatFile = () => path.join(rig.agent.workspace, 'HEARTBEAT.md');
const runNow = () => rig.agent.services.heartbeat.runNow();
const collect = async () => (await rig.get<{ messages: Pending[] }>('/pending')).body.messages;

describe('HEARTBEAT.md missing or empty', () => {
  it('missing: no model call', async () => {
    const before = rig.model.requests.length;
    expect(await runNow()).toEqual({ kind: 'no-file' });
    expect(rig.model.requests.length).toBe(before);
  });

  it.each(['', '   \n\t\n'])('empty (%j): no model call', async (content) => {
    await writeFile(heartbeatFile(), content);
    const before = rig.model.requests.length;
    expect(await runNow()).toEqual({ kind: 'empty' });
    expect(rig.model.requests.length).toBe(before);
    expect(await collect()).toEqual([]);
  });

  it('no chat yet: nobody to tell, no model call', async () => {
    await writeFile(heartbeatFile(), '- check the build');
    const before = rig.model.requests.length;
    expect(await runNow()).toEqual({ kind: 'no-chat' });
    expect(rig.model.requests.length).toBe(before);
  });
});

describe('with a HEARTBEAT.md and a chat', () => {
  beforeAll(async () => {
    rig.model.respond(() => ({ text: 'hello there' }));
    await rig.chat('older', 'hi');
    await rig.chat('newest', 'private chat history');
    await writeFile(heartbeatFile(), '- Remind me about the dentist on Fridays.');
  });

  it('a HEARTBEAT_OK reply is dropped', async () => {
    const before = rig.model.requests.length;
    rig.model.respond(() => ({ text: HEARTBEAT_OK }));
    expect(await runNow()).toEqual({ kind: 'ok', chatId: 'newest' });
    expect(rig.model.requests.length).toBe(before + 1);
    expect(await collect()).toEqual([]);
  });

  it('asks with a light context of its own: the file and the last messages of its chat, not other chats', async () => {
    const request = rig.model.requests.filter(isHeartbeat).at(-1)!;
    expect(request.messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(lastUserText(request)).toContain('Remind me about the dentist on Fridays.');
    expect(lastUserText(request)).toContain('User: private chat history');
    expect(JSON.stringify(request.messages)).not.toContain('"hi"');
    expect(rig.model.requestHeaders.at(-1)!['x-model-source']).toBe('heartbeat');
    expect((request.tools ?? []).map((t) => t.function.name)).not.toContain('spawn_subagent');
  });

  it('the light context holds the memory files and the last six entries of the chat, never the older ones', async () => {
    await writeFile(path.join(rig.agent.workspace, 'MEMORY.md'), '- The user is allergic to penicillin.');
    rig.model.respond((request) => (isHeartbeat(request) ? { text: HEARTBEAT_OK } : { text: `reply to ${lastUserText(request)}` }));
    for (let i = 1; i <= 6; i++) await rig.chat('newest', `turn ${i} of a long chat`);
    const before = rig.model.requests.length;
    expect(await runNow()).toEqual({ kind: 'ok', chatId: 'newest' });
    expect(rig.model.requests.length).toBe(before + 1);
    const request = rig.model.requests.at(-1)!;
    const system = String(request.messages[0]!.content);
    expect(system).toContain('## MEMORY.md\n- The user is allergic to penicillin.');
    const asked = lastUserText(request);
    // Six entries: the last three turns, each a message and its reply.
    for (const i of [4, 5, 6]) {
      expect(asked).toContain(`User: turn ${i} of a long chat`);
      expect(asked).toContain(`You: reply to turn ${i} of a long chat`);
    }
    for (const i of [1, 2, 3]) expect(asked).not.toContain(`turn ${i} of a long chat`);
    expect(asked).not.toContain('private chat history');
    // The chat itself is one user message of the heartbeat's, not the chat's history replayed.
    expect(request.messages.map((m) => m.role)).toEqual(['system', 'user']);
    await rm(path.join(rig.agent.workspace, 'MEMORY.md'));
  });

  it('an alert becomes one pending message for the most recently active chat', async () => {
    rig.model.respond(() => ({ text: ['It is Friday: ', 'call the dentist.'] }));
    expect(await runNow()).toEqual({ kind: 'alert', chatId: 'newest', content: 'It is Friday: call the dentist.' });
    expect(await collect()).toEqual([
      {
        chat_id: 'newest',
        content: 'It is Friday: call the dentist.',
        source: 'heartbeat',
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}$/),
      },
    ]);
  });

  it('a model error delivers nothing', async () => {
    rig.model.respond(() => ({ httpError: { status: 500, message: 'down' } }));
    expect(await runNow()).toMatchObject({ kind: 'failed', chatId: 'newest' });
    expect(await collect()).toEqual([]);
  });

  it('never overlaps itself: a second heartbeat while one runs is skipped', async () => {
    rig.model.respond(() => ({ text: [HEARTBEAT_OK], delayMs: 300 }));
    const before = rig.model.requests.length;
    const [first, second] = await Promise.all([runNow(), runNow()]);
    expect(first).toEqual({ kind: 'ok', chatId: 'newest' });
    expect(second).toEqual({ kind: 'overlap' });
    expect(rig.model.requests.length).toBe(before + 1);
  });

  it("waits for the user's active run in that chat to end, then runs", async () => {
    rig.model.respond((request) => (isHeartbeat(request) ? { text: 'Alert after the user run.' } : { text: ['a', 'b', 'c', 'd'], delayMs: 100 }));
    const stream = await rig.post('newest', 'a slow question');
    await until(() => rig.agent.services.chat.active('newest').active);
    const heartbeatsBefore = rig.model.requests.filter(isHeartbeat).length;
    const outcome = runNow();
    await sleep(150);
    expect(rig.model.requests.filter(isHeartbeat).length).toBe(heartbeatsBefore); // still waiting
    expect(rig.agent.services.heartbeat.running).toBe(true);
    const frames = await readFrames(stream);
    const userEnded = Date.now();
    expect(frames.at(-1)!.data.type).toBe('done');
    expect(await outcome).toMatchObject({ kind: 'alert', chatId: 'newest' });
    // The heartbeat's request came after the user's run ended (the last request is the heartbeat's).
    expect(isHeartbeat(rig.model.requests.at(-1)!)).toBe(true);
    expect(Date.now()).toBeGreaterThanOrEqual(userEnded);
    expect((await collect()).map((m) => m.content)).toEqual(['Alert after the user run.']);
  });

  it('gives way when the user starts a run in that chat while it thinks: nothing delivered', async () => {
    rig.model.respond((request) => (isHeartbeat(request) ? { text: 'never delivered', hang: true } : { text: 'answer' }));
    const outcome = runNow();
    await until(() => rig.model.requests.length > 0 && isHeartbeat(rig.model.requests.at(-1)!) && rig.model.openStreams() === 1);
    const frames = await rig.chat('newest', 'me first');
    expect(frames.map((f) => f.data)).toEqual([{ type: 'text', content: 'answer' }, { type: 'done' }]);
    expect(await outcome).toEqual({ kind: 'busy', chatId: 'newest' });
    await until(() => rig.model.openStreams() === 0);
    expect(await collect()).toEqual([]);
  });
});

describe('skip when the user stays busy', () => {
  it('with HEARTBEAT_WAIT=0 a heartbeat during a user run is skipped without a model call', async () => {
    const busy = await startChatRig({ HEARTBEAT_WAIT: '0' });
    try {
      await writeFile(path.join(busy.agent.workspace, 'HEARTBEAT.md'), '- anything?');
      busy.model.respond(() => ({ text: 'slow', hang: true }));
      const stream = await busy.post('only', 'question');
      await until(() => busy.model.openStreams() === 1);
      const before = busy.model.requests.length;
      expect(await busy.agent.services.heartbeat.runNow()).toEqual({ kind: 'busy', chatId: 'only' });
      expect(busy.model.requests.length).toBe(before);
      stream.close();
    } finally {
      await busy.stop();
    }
  });
});

describe('the interval', () => {
  it('HEARTBEAT_INTERVAL fires heartbeats on its own', async () => {
    const timed = await startChatRig({ HEARTBEAT_INTERVAL: '0.2' });
    try {
      timed.model.respond((request) => (isHeartbeat(request) ? { text: 'Timed alert.' } : { text: 'hi' }));
      await timed.chat('t', 'hello');
      await writeFile(path.join(timed.agent.workspace, 'HEARTBEAT.md'), '- ping');
      await until(async () => (await timed.agent.services.pending.count()) > 0, 5_000);
      const messages = (await timed.get<{ messages: Pending[] }>('/pending')).body.messages;
      expect(messages[0]).toMatchObject({ chat_id: 't', source: 'heartbeat', content: 'Timed alert.' });
    } finally {
      await timed.stop();
    }
  });

  it('HEARTBEAT_INTERVAL=0 disables them', async () => {
    await writeFile(heartbeatFile(), '- ping');
    rig.model.respond(() => ({ text: 'should not be asked' }));
    const before = rig.model.requests.length;
    await sleep(400);
    expect(rig.model.requests.length).toBe(before);
    await rm(heartbeatFile());
  });
});

describe('isHeartbeatOk', () => {
  it.each([
    [HEARTBEAT_OK, true],
    ['  HEARTBEAT_OK\n', true],
    ['**HEARTBEAT_OK**', true],
    ['`HEARTBEAT_OK`.', true],
    ['HEARTBEAT_OK — all quiet.', true],
    ['Nothing new today. HEARTBEAT_OK', true],
    ['', true],
    ['The server is down!', false],
    [`HEARTBEAT_OK ${'but '.repeat(100)}`, false],
    ['Warning: HEARTBEAT_OK is not what I would say here, the disk is full.', false],
  ])('%j → %s', (reply, ok) => {
    expect(isHeartbeatOk(reply)).toBe(ok);
  });
});
