/** The same chat API over tRPC (what the web client uses): subscriptions over SSE, queries, mutation. */
import { TRPCClientError, type TRPCClient } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearerTrpcClient } from '../../server/account/agents/client.js';
import type { AgentRouter } from '../../server/agent/router.js';
import type { ChatEvent } from '@contracts/agent/chat.js';
import { lastUserText } from '../support/scripted-model.js';
import { startChatRig, until, type ChatRig } from './helpers.js';

let rig: ChatRig;
let client: TRPCClient<AgentRouter>;

beforeAll(async () => {
  rig = await startChatRig();
  const url = `${rig.agent.url}/trpc`;
  const authorization = rig.agent.auth.authorization;
  client = bearerTrpcClient<AgentRouter>(url, () => authorization);
});
afterAll(() => rig.stop());

/** Subscribes and collects `{id, event}` until `done` (keepalives left out). */
function collect(
  start: (handlers: { onData(value: { id: string; data: ChatEvent } | ChatEvent): void; onError(e: unknown): void }) => { unsubscribe(): void },
) {
  return new Promise<Array<{ id?: string; event: ChatEvent }>>((resolve, reject) => {
    const got: Array<{ id?: string; event: ChatEvent }> = [];
    const sub = start({
      onData(value) {
        const item = 'type' in value ? { event: value } : { id: value.id, event: value.data };
        if (item.event.type !== 'keepalive') got.push(item);
        if (item.event.type === 'done') {
          sub.unsubscribe();
          resolve(got);
        }
      },
      onError: reject,
    });
  });
}

describe('chat over tRPC', () => {
  it('chat.send streams the same events as POST /chat, with tracked ids', async () => {
    rig.model.queue({ text: ['one ', 'two'] });
    const got = await collect((h) => client.chat.send.subscribe({ message: 'hi', chat_id: 't1' }, h));
    expect(got.map((g) => g.event)).toEqual([{ type: 'text', content: 'one ' }, { type: 'text', content: 'two' }, { type: 'done' }]);
    expect(got.every((g) => /^[0-9a-f]{12}-\d+$/.test(g.id ?? ''))).toBe(true);
  });

  it('chat.active, chat.history and chat.delete answer as the REST paths do', async () => {
    expect(await client.chat.active.query({ chat_id: 't1' })).toEqual({ active: false, user_message: '' });
    const history = await client.chat.history.query({ chat_id: 't1', limit: 5000 });
    expect(history).toEqual((await rig.get('/chat/t1/history')).body);
    expect(history.messages).toHaveLength(2);
    expect(await client.chat.delete.mutate({ chat_id: 't1' })).toEqual({ status: 'ok', deleted: 2 });
  });

  it('chat.stream replays the active run with stream_meta first, and resumes from lastEventId', async () => {
    rig.model.queue({ text: Array.from({ length: 10 }, (_, i) => `${i},`), delayMs: 20 });
    const live = collect((h) => client.chat.send.subscribe({ message: 'count', chat_id: 't2' }, h));
    await new Promise((resolve) => setTimeout(resolve, 60));
    const replay = await collect((h) => client.chat.stream.subscribe({ chat_id: 't2' }, h));
    const original = await live;
    expect(replay[0]!.event).toEqual({ type: 'stream_meta', user_message: 'count' });
    expect(replay.slice(1)).toEqual(original);
    const tail = await collect((h) => client.chat.stream.subscribe({ chat_id: 't2', lastEventId: original[7]!.id }, h));
    expect(tail).toEqual(original.slice(8));
  });

  it('a reconnecting chat.send (lastEventId set) resumes instead of starting a new run', async () => {
    rig.model.queue({ text: ['a', 'b', 'c'] });
    const first = await collect((h) => client.chat.send.subscribe({ message: 'abc', chat_id: 't3' }, h));
    const requests = rig.model.requests.length;
    const again = await collect((h) => client.chat.send.subscribe({ message: 'abc', chat_id: 't3', lastEventId: first[0]!.id }, h));
    expect(again).toEqual(first.slice(1));
    expect(rig.model.requests.length).toBe(requests);
  });

  it('chat.start takes a 32,000-character message in a POST body; chat.stream follows the run from last_event_id', async () => {
    const message = 'é'.repeat(16_000) + 'z'.repeat(16_000);
    rig.model.queue({ text: ['got ', 'it'] });
    const started = await client.chat.start.mutate({ message, chat_id: 't4' });
    expect(started).toEqual({ chat_id: 't4', run_id: expect.stringMatching(/^[0-9a-f]{12}$/), last_event_id: `${started.run_id}-0` });
    const got = await collect((h) => client.chat.stream.subscribe({ chat_id: 't4', lastEventId: started.last_event_id }, h));
    expect(got.map((g) => g.event)).toEqual([{ type: 'text', content: 'got ' }, { type: 'text', content: 'it' }, { type: 'done' }]);
    expect(got[0]!.id).toBe(`${started.run_id}-1`);
    expect(lastUserText(rig.model.requests.at(-1)!)).toBe(message);
    expect((await client.chat.history.query({ chat_id: 't4' })).messages[0]).toEqual({
      type: 'text',
      content: message,
      name: 'user',
      message_id: expect.any(String),
    });
  });

  it('chat.stream from last_event_id still gets the whole reply when the run ended before it joined', async () => {
    rig.model.queue({ text: ['quick'] });
    const started = await client.chat.start.mutate({ message: 'fast', chat_id: 't5' });
    await until(async () => !(await client.chat.active.query({ chat_id: 't5' })).active);
    const got = await collect((h) => client.chat.stream.subscribe({ chat_id: 't5', lastEventId: started.last_event_id }, h));
    expect(got.map((g) => g.event)).toEqual([{ type: 'text', content: 'quick' }, { type: 'done' }]);
  });

  it.each([
    ['one character over the bound', { message: 'x'.repeat(32_001), chat_id: 't6' }],
    ['a blank message', { message: ' \n ', chat_id: 't6' }],
    ['a chat id with a slash', { message: 'hi', chat_id: '../t6' }],
  ])('chat.start refuses %s with 400 VALIDATION_FAILED and starts nothing', async (_name, input) => {
    const requests = rig.model.requests.length;
    const error = await client.chat.start.mutate(input).catch((e: unknown) => e);
    expect((error as TRPCClientError<AgentRouter>).data).toMatchObject({ code: 'VALIDATION_FAILED', httpStatus: 400 });
    expect(rig.model.requests.length).toBe(requests);
    expect(await client.chat.active.query({ chat_id: 't6' })).toEqual({ active: false, user_message: '' });
  });

  it('chat.stop ends the run with error "stopped"; a second stop is 409 RUN_NOT_ACTIVE', async () => {
    rig.model.queue({ text: ['partial'], hang: true });
    const started = await client.chat.start.mutate({ message: 'go on', chat_id: 't7' });
    const reply = collect((h) => client.chat.stream.subscribe({ chat_id: 't7', lastEventId: started.last_event_id }, h));
    await until(() => rig.model.openStreams() === 1);
    await client.chat.stop.mutate({ chat_id: 't7' });
    expect((await reply).map((g) => g.event).slice(-2)).toEqual([{ type: 'error', content: 'stopped' }, { type: 'done' }]);
    const again = await client.chat.stop.mutate({ chat_id: 't7' }).catch((e: unknown) => e);
    expect((again as TRPCClientError<AgentRouter>).data).toMatchObject({ code: 'RUN_NOT_ACTIVE', httpStatus: 409 });
  });

  it('refuses a bad chat id and a bad limit with the machine code', async () => {
    const error = await client.chat.history.query({ chat_id: '../x', limit: 0 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TRPCClientError);
    expect((error as TRPCClientError<AgentRouter>).data?.code).toBe('VALIDATION_FAILED');
  });

  // Last: it puts the shared agent into its stopping state.
  it('chat.start while the agent stops (SIGTERM) is 503 SHUTTING_DOWN with Retry-After, and starts nothing', async () => {
    await rig.agent.services.drain(0);
    const res = await fetch(`${rig.agent.url}/trpc/chat.start`, {
      method: 'POST',
      headers: { ...rig.agent.auth, 'content-type': 'application/json' },
      body: JSON.stringify({ json: { message: 'too late', chat_id: 't9' } }),
    });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    expect(JSON.stringify(await res.json())).toContain('SHUTTING_DOWN');
    expect(await client.chat.active.query({ chat_id: 't9' })).toEqual({ active: false, user_message: '' });
  });
});
