import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastUserText } from '../support/scripted-model.js';
import { events, readFrames, takeEvents, withoutKeepalive, type SseFrame } from '../support/sse.js';
import { sleep, startChatRig, until, type ChatRig } from './helpers.js';

let rig: ChatRig;
beforeAll(async () => {
  rig = await startChatRig({ AGENT_RUN_TIMEOUT: '3', AGENT_KEEPALIVE_INTERVAL: '0.1', AGENT_STREAM_GRACE: '1' });
});
afterAll(() => rig.stop());

const seqOf = (frame: SseFrame) => Number(frame.id!.split('-')[1]);
const tokens = (n: number, prefix = 't') => Array.from({ length: n }, (_, i) => `${prefix}${i} `);

describe('runs', () => {
  it('ends a run that exceeds the run timeout with an `error` event, then `done`', async () => {
    const quick = await startChatRig({ AGENT_RUN_TIMEOUT: '1' });
    try {
      quick.model.queue({ text: ['thinking '], hang: true });
      const frames = await readFrames(await quick.post('slow', 'take your time'));
      expect(events(withoutKeepalive(frames))).toEqual([
        { type: 'text', content: 'thinking ' },
        { type: 'error', content: expect.stringMatching(/timed out/) },
        { type: 'done' },
      ]);
      const { body } = await quick.get('/chat/slow/history');
      expect(body).toEqual({
        messages: [
          { type: 'text', content: 'take your time', name: 'user', message_id: expect.any(String) },
          { type: 'text', content: 'thinking ', cut: true },
        ],
      });
      await until(() => quick.model.openStreams() === 0);
    } finally {
      await quick.stop();
    }
  });

  it('sends keepalive events (no id) while a slow tool runs', async () => {
    rig.model.queue({ toolCalls: [{ name: 'exec', args: { command: 'sleep 0.5; echo finished' } }] }, { text: 'done sleeping' });
    const frames = await readFrames(await rig.post('keepalive', 'sleep a bit'));
    const types = frames.map((f) => f.data.type);
    const toolAt = types.indexOf('tool_use');
    const textAt = types.indexOf('text');
    const between = frames.slice(toolAt + 1, textAt);
    expect(between.length).toBeGreaterThanOrEqual(2);
    for (const frame of between) {
      expect(frame.data).toEqual({ type: 'keepalive' });
      expect(frame.id).toBeUndefined();
    }
    expect(types.at(-1)).toBe('done');
  });

  it('a second POST cancels the running one: the old stream ends with `done`, its partial text kept as cut', async () => {
    rig.model.respond((request) => (lastUserText(request) === 'first' ? { text: ['par', 'tial'], hang: true } : { text: 'second reply' }));
    const first = await rig.post('cancel', 'first');
    const firstFrames = await takeEvents(first, 2);
    const secondFrames = await rig.chat('cancel', 'second');
    const firstRest = await readFrames(first);
    expect(events(withoutKeepalive([...firstFrames, ...firstRest]))).toEqual([
      { type: 'text', content: 'par' },
      { type: 'text', content: 'tial' },
      { type: 'done' },
    ]);
    expect(events(withoutKeepalive(secondFrames))).toEqual([{ type: 'text', content: 'second reply' }, { type: 'done' }]);
    const { body } = await rig.get('/chat/cancel/history');
    expect(body).toEqual({
      messages: [
        { type: 'text', content: 'first', name: 'user', message_id: expect.any(String) },
        { type: 'text', content: 'partial', cut: true },
        { type: 'text', content: 'second', name: 'user', message_id: expect.any(String) },
        { type: 'text', content: 'second reply' },
      ],
    });
    // The model saw the cut text as interrupted context for the second message.
    const last = rig.model.requests.at(-1)!;
    expect(last.messages.map((m) => m.content)).toContain('partial …(interrupted)');
  });

  it('replays a run on reconnect: stream_meta first, then the same events, no duplicates, then live', async () => {
    rig.model.queue({ text: tokens(30), delayMs: 15 });
    const original = await rig.post('replay', 'count for me');
    const before = await takeEvents(original, 10);
    const reconnect = await rig.stream('replay');
    const originalAll = withoutKeepalive([...before, ...(await readFrames(original))]);
    const replayed = withoutKeepalive(await readFrames(reconnect));
    expect(replayed[0]!.data).toEqual({ type: 'stream_meta', user_message: 'count for me' });
    expect(replayed.slice(1).map((f) => [f.id, f.data])).toEqual(originalAll.map((f) => [f.id, f.data]));
    expect(new Set(replayed.map((f) => f.id)).size).toBe(replayed.length);
    expect(events(originalAll).filter((e) => e.type === 'text')).toHaveLength(30);
  });

  it('resumes after Last-Event-ID without duplicates', async () => {
    rig.model.queue({ text: tokens(20, 'r'), delayMs: 15 });
    const original = await rig.post('resume', 'go');
    const got = await takeEvents(original, 5);
    original.close(); // the client drops
    const resumed = withoutKeepalive(await readFrames(await rig.stream('resume', got.at(-1)!.id)));
    const all = [...got, ...resumed];
    expect(all.map(seqOf)).toEqual(Array.from({ length: 21 }, (_, i) => i + 1));
    expect(
      events(all)
        .filter((e) => e.type === 'text')
        .map((e) => e.content)
        .join(''),
    ).toBe(tokens(20, 'r').join(''));
    expect(resumed[0]!.data.type).not.toBe('stream_meta');
  });

  it('after the end: a plain reconnect gets a single `done`; one with Last-Event-ID within the grace period gets the tail', async () => {
    rig.model.queue({ text: ['a', 'b', 'c'] });
    const frames = await rig.chat('ended', 'x');
    const plain = await readFrames(await rig.stream('ended'));
    expect(plain.map((f) => [f.id, f.data])).toEqual([[undefined, { type: 'done' }]]);
    const tail = await readFrames(await rig.stream('ended', frames[0]!.id));
    expect(tail.map((f) => f.data)).toEqual([{ type: 'text', content: 'b' }, { type: 'text', content: 'c' }, { type: 'done' }]);
    await sleep(1_300); // grace (1 s here) over
    expect(events(await readFrames(await rig.stream('ended', frames[0]!.id)))).toEqual([{ type: 'done' }]);
    // ids of another chat's run do not leak it
    expect(events(await readFrames(await rig.stream('other-chat', frames[0]!.id)))).toEqual([{ type: 'done' }]);
  });

  it('a client that disconnects does not stop the run; its reply lands in history', async () => {
    rig.model.queue({ text: tokens(15, 'd'), delayMs: 20 });
    const stream = await rig.post('gone', 'keep going without me');
    await takeEvents(stream, 1);
    stream.close();
    await sleep(50);
    expect((await rig.get('/chat/gone/active')).body).toEqual({ active: true, user_message: 'keep going without me' });
    await until(async () => (await rig.get<{ active: boolean }>('/chat/gone/active')).body.active === false);
    const { body } = await rig.get('/chat/gone/history');
    expect(body).toEqual({
      messages: [
        { type: 'text', content: 'keep going without me', name: 'user', message_id: expect.any(String) },
        { type: 'text', content: tokens(15, 'd').join('') },
      ],
    });
  });

  it('a slow reader does not hold the run back', async () => {
    rig.model.queue({ text: tokens(200, 's') });
    const stream = await rig.post('slowreader', 'lots');
    await takeEvents(stream, 1);
    await until(async () => (await rig.get<{ active: boolean }>('/chat/slowreader/active')).body.active === false);
    const rest = await readFrames(stream);
    expect(events(rest).filter((e) => e.type === 'text')).toHaveLength(199);
  });
});
