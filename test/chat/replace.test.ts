/**
 * Regenerate and edit-and-resend (`replace_from` on `chat.start` and `POST /chat`): a clear
 * replacement, not a branch. The named user message and everything after it go, the new message
 * takes its place in one transaction, and the new run sees only what is left. Hostile input: an
 * unknown id, another chat's id, a replacement while a reply runs, and a replayed request.
 */
import { TRPCClientError, type TRPCClient } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearerTrpcClient } from '../../server/account/agents/client.js';
import type { AgentRouter } from '../../server/agent/router.js';
import type { ChatEvent } from '@contracts/agent/chat.js';
import { openSse, readFrames, withoutKeepalive } from '../support/sse.js';
import { startChatRig, until, type ChatRig } from './helpers.js';

let rig: ChatRig;
let client: TRPCClient<AgentRouter>;

beforeAll(async () => {
  rig = await startChatRig();
  const authorization = rig.agent.auth.authorization;
  client = bearerTrpcClient<AgentRouter>(`${rig.agent.url}/trpc`, () => authorization);
});
afterAll(() => rig.stop());

const history = async (chatId: string) => (await client.chat.history.query({ chat_id: chatId, limit: 100 })).messages;
const userIds = (messages: ChatEvent[]) => messages.flatMap((m) => (m.type === 'text' && m.name === 'user' && m.message_id ? [m.message_id] : []));

/** Starts a run over tRPC and waits until it has ended. */
async function startAndFinish(input: { chat_id: string; message: string; replace_from?: string }): Promise<string> {
  const started = await client.chat.start.mutate(input);
  await until(async () => !(await client.chat.active.query({ chat_id: input.chat_id })).active);
  return started.run_id;
}

/** The error code of a refused call. */
async function refusal(call: Promise<unknown>): Promise<{ code: unknown; status: unknown }> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TRPCClientError);
  const data = (error as TRPCClientError<AgentRouter>).data as { code?: unknown; httpStatus?: unknown } | undefined;
  return { code: data?.code, status: data?.httpStatus };
}

describe('replacing a user message (regenerate, edit and resend)', () => {
  it('history gives each user message its id: the run it started', async () => {
    rig.model.queue({ text: 'first answer' });
    const runId = await startAndFinish({ chat_id: 'r1', message: 'question one' });
    const messages = await history('r1');
    expect(messages[0]).toEqual({ type: 'text', content: 'question one', name: 'user', message_id: runId });
    expect(messages[1]).toEqual({ type: 'text', content: 'first answer' });
  });

  it('regenerate: the last reply is replaced by a new run from the same message, and the model sees no trace of the old one', async () => {
    rig.model.queue({ text: 'second answer' });
    const second = await startAndFinish({ chat_id: 'r1', message: 'question two' });
    rig.model.queue({ text: 'second answer, again' });
    const before = rig.model.requests.length;
    const again = await startAndFinish({ chat_id: 'r1', message: 'question two', replace_from: second });
    expect(again).not.toBe(second);
    const messages = await history('r1');
    expect(messages.map((m) => (m.type === 'text' ? m.content : m.type))).toEqual(['question one', 'first answer', 'question two', 'second answer, again']);
    expect(userIds(messages)[1]).toBe(again);
    // The new run's context: the earlier exchange and the message once, not the replaced reply.
    const request = rig.model.requests[before]!;
    const texts = request.messages.filter((m) => m.role !== 'system').map((m) => `${m.role}:${String(m.content)}`);
    expect(texts).toEqual(['user:question one', 'assistant:first answer', 'user:question two']);
  });

  it('edit and resend: an earlier message is replaced together with everything after it', async () => {
    const first = userIds(await history('r1'))[0]!;
    rig.model.queue({ text: 'edited answer' });
    await startAndFinish({ chat_id: 'r1', message: 'question one, edited', replace_from: first });
    const messages = await history('r1');
    expect(messages.map((m) => (m.type === 'text' ? m.content : m.type))).toEqual(['question one, edited', 'edited answer']);
    // The chat stays listed under its id.
    expect((await client.chats.list.query({})).chats.map((c) => c.chat_id)).toContain('r1');
  });

  it('a replayed replacement, an unknown id and another chat’s id are 404 MESSAGE_NOT_FOUND and change nothing', async () => {
    rig.model.queue({ text: 'other chat answer' });
    const otherChatMessage = await startAndFinish({ chat_id: 'r2', message: 'in another chat' });
    const [current] = userIds(await history('r1'));
    const before = await history('r1');
    const beforeRequests = rig.model.requests.length;

    // Replayed: the id of the message that the edit above replaced.
    for (const replace_from of ['000000000000', otherChatMessage, 'not-a-message']) {
      expect(await refusal(client.chat.start.mutate({ chat_id: 'r1', message: 'again', replace_from }))).toEqual({ code: 'MESSAGE_NOT_FOUND', status: 404 });
    }
    // The same request twice: the second finds its message gone.
    rig.model.queue({ text: 'replayed once' });
    await startAndFinish({ chat_id: 'r1', message: 'replay me', replace_from: current! });
    expect(await refusal(client.chat.start.mutate({ chat_id: 'r1', message: 'replay me', replace_from: current! }))).toEqual({
      code: 'MESSAGE_NOT_FOUND',
      status: 404,
    });
    expect((await history('r1')).map((m) => (m.type === 'text' ? m.content : m.type))).toEqual(['replay me', 'replayed once']);
    expect(before).toHaveLength(2);
    // Only the one accepted replacement reached the model.
    expect(rig.model.requests.length).toBe(beforeRequests + 1);
    // The other chat is untouched.
    expect((await history('r2')).map((m) => (m.type === 'text' ? m.content : m.type))).toEqual(['in another chat', 'other chat answer']);
  });

  it('an id that breaks the rules is 400 before anything happens', async () => {
    for (const replace_from of ['', 'a/b', 'x'.repeat(65), '../1']) {
      expect((await refusal(client.chat.start.mutate({ chat_id: 'r1', message: 'x', replace_from }))).status).toBe(400);
    }
  });

  it('while a reply runs, a replacement is 409 RUN_ACTIVE and the running reply goes on', async () => {
    rig.model.queue({ text: Array.from({ length: 20 }, (_, i) => `${i} `), delayMs: 30 });
    const running = await client.chat.start.mutate({ chat_id: 'r3', message: 'long one' });
    expect(await refusal(client.chat.start.mutate({ chat_id: 'r3', message: 'long one', replace_from: running.run_id }))).toEqual({
      code: 'RUN_ACTIVE',
      status: 409,
    });
    expect((await client.chat.active.query({ chat_id: 'r3' })).active).toBe(true);
    await until(async () => !(await client.chat.active.query({ chat_id: 'r3' })).active);
    const messages = await history('r3');
    expect(messages.map((m) => m.type === 'text' && m.content)).toEqual(['long one', Array.from({ length: 20 }, (_, i) => `${i} `).join('')]);
  });

  it('chat.send with replace_from is refused before its stream begins (an error, not an event)', async () => {
    const error = await new Promise<unknown>((resolve) => {
      const sub = client.chat.send.subscribe(
        { chat_id: 'r1', message: 'x', replace_from: '000000000000' },
        {
          onData: (value) => {
            sub.unsubscribe();
            resolve(value);
          },
          onError: resolve,
        },
      );
    });
    expect(error).toBeInstanceOf(TRPCClientError);
    expect((error as TRPCClientError<AgentRouter>).data).toMatchObject({ code: 'MESSAGE_NOT_FOUND', httpStatus: 404 });
  });

  it('over REST, POST /chat takes replace_from too: a refusal is the HTTP answer, an accepted one streams', async () => {
    const json = { 'content-type': 'application/json', ...rig.agent.auth };
    const post = (body: unknown) => fetch(`${rig.agent.url}/chat`, { method: 'POST', headers: json, body: JSON.stringify(body) });
    const refused = await post({ chat_id: 'r1', message: 'x', replace_from: '000000000000' });
    expect(refused.status).toBe(404);
    expect(await refused.json()).toMatchObject({ code: 'MESSAGE_NOT_FOUND' });

    rig.model.queue({ text: Array.from({ length: 10 }, (_, i) => `${i} `), delayMs: 30 });
    const running = await client.chat.start.mutate({ chat_id: 'r4', message: 'busy' });
    const busy = await post({ chat_id: 'r4', message: 'busy', replace_from: running.run_id });
    expect(busy.status).toBe(409);
    expect(await busy.json()).toMatchObject({ code: 'RUN_ACTIVE' });
    await until(async () => !(await client.chat.active.query({ chat_id: 'r4' })).active);

    rig.model.queue({ text: 'rest regenerated' });
    const [id] = userIds(await history('r4'));
    const stream = await openSse(`${rig.agent.url}/chat`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ chat_id: 'r4', message: 'busy', replace_from: id }),
    });
    const frames = withoutKeepalive(await readFrames(stream));
    expect(frames.map((f) => f.data)).toEqual([{ type: 'text', content: 'rest regenerated' }, { type: 'done' }]);
    expect((await history('r4')).map((m) => (m.type === 'text' ? m.content : m.type))).toEqual(['busy', 'rest regenerated']);
  });
});
