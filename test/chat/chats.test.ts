/**
 * The list of chats on the agent over real HTTP (REST and tRPC) with the scripted model:
 * `GET /chats` (newest activity first, titled by the first user message, `active` while a reply
 * runs), `PATCH /chats/{chat_id}` (rename), `DELETE /chat/{chat_id}` taking a chat off the list;
 * and the refusals: malformed ids, unknown chats, titles too long or holding control and
 * direction-override characters, a missing secret.
 */
import { TRPCClientError } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearerTrpcClient } from '../../server/account/agents/client.js';
import type { AgentRouter } from '../../server/agent/router.js';
import { readFrames } from '../support/sse.js';
import { startChatRig, until, type ChatRig } from './helpers.js';

let rig: ChatRig;
beforeAll(async () => {
  rig = await startChatRig();
});
afterAll(() => rig.stop());

type Listed = { chat_id: string; title: string; created_at: string; updated_at: string; active: boolean };
const list = async () => (await rig.get<{ chats: Listed[] }>('/chats')).body.chats;
const rename = (chatId: string, body: unknown, init: { headers?: Record<string, string> } = {}) =>
  fetch(`${rig.agent.url}/chats/${chatId}`, {
    method: 'PATCH',
    headers: { ...rig.agent.auth, 'content-type': 'application/json', ...init.headers },
    body: JSON.stringify(body),
  });

describe('GET /chats', () => {
  it('lists chats newest activity first, titled by their first user message cut to 80 characters', async () => {
    expect(await list()).toEqual([]);
    rig.model.queue({ text: 'one' });
    await rig.chat('first', 'Plan my\n\tweek');
    const long = `${'word '.repeat(30)}end`;
    rig.model.queue({ text: 'two' });
    await rig.chat('second', long);

    const chats = await list();
    expect(chats.map((c) => c.chat_id)).toEqual(['second', 'first']);
    expect(chats[1]).toEqual({ chat_id: 'first', title: 'Plan my week', created_at: expect.any(String), updated_at: expect.any(String), active: false });
    expect([...chats[0]!.title]).toHaveLength(80);
    expect(chats[0]!.title.endsWith('…')).toBe(true);
    expect(long.startsWith(chats[0]!.title.slice(0, -1))).toBe(true);
    expect(Date.parse(chats[0]!.updated_at)).toBeGreaterThanOrEqual(Date.parse(chats[1]!.updated_at));

    // A later message moves the chat up and keeps its title.
    rig.model.queue({ text: 'three' });
    await rig.chat('first', 'and the weekend');
    const again = await list();
    expect(again.map((c) => [c.chat_id, c.title])).toEqual([
      ['first', 'Plan my week'],
      ['second', chats[0]!.title],
    ]);
    expect(again[0]!.created_at).toBe(chats[1]!.created_at);
  });

  it('marks the chat whose reply is running as active', async () => {
    rig.model.queue({ text: ['x'], hang: true });
    const stream = await rig.post('running', 'go on');
    await readFrames(stream, (f) => f.data.type === 'text');
    expect((await list()).find((c) => c.chat_id === 'running')).toMatchObject({ active: true, title: 'go on' });
    expect((await list()).filter((c) => c.active).map((c) => c.chat_id)).toEqual(['running']);
    const stop = await fetch(`${rig.agent.url}/chat/running/stop`, { method: 'POST', headers: rig.agent.auth });
    expect(stop.status).toBe(204);
    await readFrames(stream);
    expect((await list()).find((c) => c.chat_id === 'running')).toMatchObject({ active: false });
  });

  it('takes a deleted chat off the list; a new message brings it back with a new title', async () => {
    rig.model.queue({ text: 'ok' });
    await rig.chat('gone', 'delete me');
    expect((await list()).some((c) => c.chat_id === 'gone')).toBe(true);
    expect((await rig.del('/chat/gone')).status).toBe(200);
    expect((await list()).some((c) => c.chat_id === 'gone')).toBe(false);
    rig.model.queue({ text: 'ok' });
    await rig.chat('gone', 'fresh start');
    expect((await list()).find((c) => c.chat_id === 'gone')?.title).toBe('fresh start');
  });

  it('bounds the answer by limit; refuses a limit below 1 or not a number', async () => {
    expect(await rig.get<{ chats: unknown[] }>('/chats?limit=1')).toMatchObject({ status: 200, body: { chats: [expect.anything()] } });
    for (const limit of ['0', '-1', 'abc', '1.5']) expect((await rig.get(`/chats?limit=${limit}`)).status, limit).toBe(400);
  });
});

describe('PATCH /chats/{chat_id}', () => {
  it('renames a chat (trimmed), and the list shows the new title', async () => {
    rig.model.queue({ text: 'ok' });
    await rig.chat('renamed', 'old title');
    const res = await rename('renamed', { title: '  Trip to Lisbon  ' });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ chat_id: 'renamed', title: 'Trip to Lisbon', active: false });
    expect((await list()).find((c) => c.chat_id === 'renamed')?.title).toBe('Trip to Lisbon');
    // Exactly 80 characters (astral ones count once) is fine.
    const emoji = '🙂'.repeat(80);
    expect((await rename('renamed', { title: emoji })).status).toBe(200);
    // Markup is just text: kept as given, never interpreted here (the page shows it as text).
    const markup = '<img src=x onerror=alert(1)>';
    expect(await (await rename('renamed', { title: markup })).json()).toMatchObject({ title: markup });
  });

  it('answers 404 CHAT_NOT_FOUND for a chat not in the list', async () => {
    const res = await rename('never-used', { title: 'x' });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ detail: expect.any(String), code: 'CHAT_NOT_FOUND' });
    expect((await list()).some((c) => c.chat_id === 'never-used')).toBe(false);
  });

  it.each([
    ['empty', ''],
    ['blank', '   '],
    ['81 characters', 'x'.repeat(81)],
    ['a line break', 'two\nlines'],
    ['NUL', 'a\u0000b'],
    ['an escape sequence', 'red\u001b[31m'],
    ['DEL', 'a\u007fb'],
    ['a right-to-left override', 'invoice\u202Efdp.exe'],
    ['a bidi isolate', 'a\u2066b'],
    ['a line separator', 'a\u2028b'],
    ['a number', 42],
  ])('refuses a title with %s (400), leaving the old one', async (_name, title) => {
    rig.model.queue({ text: 'ok' });
    await rig.chat('guarded-title', 'keep me');
    const res = await rename('guarded-title', { title });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 'VALIDATION_FAILED' });
    expect((await list()).find((c) => c.chat_id === 'guarded-title')?.title).toBe('keep me');
  });

  it.each(['a%20b', 'a%2Fb', '..%2F..%2Fetc', 'x'.repeat(129), '%00'])('refuses the chat id %s with 400', async (id) => {
    const res = await rename(id, { title: 'x' });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 'VALIDATION_FAILED' });
  });

  it('takes the chat from the path: a chat_id in the body renames nothing else', async () => {
    rig.model.queue({ text: 'ok' });
    await rig.chat('target-chat', 'target');
    const res = await rename('bystander', { chat_id: 'target-chat', title: 'hijacked' });
    expect(res.status).toBe(404);
    expect((await list()).find((c) => c.chat_id === 'target-chat')?.title).toBe('target');
  });

  it('needs the agent secret for both paths', async () => {
    for (const headers of [{}, { authorization: 'Bearer wrong' }] as Array<Record<string, string>>) {
      expect((await fetch(`${rig.agent.url}/chats`, { headers })).status).toBe(401);
      const res = await fetch(`${rig.agent.url}/chats/target-chat`, {
        method: 'PATCH',
        headers: { ...headers, 'content-type': 'application/json' },
        body: '{"title":"x"}',
      });
      expect(res.status).toBe(401);
    }
    expect((await list()).find((c) => c.chat_id === 'target-chat')?.title).toBe('target');
  });

  it('both are in the OpenAPI document', async () => {
    const { body } = await rig.get<{ paths: Record<string, Record<string, unknown>> }>('/openapi.json');
    expect(Object.keys(body.paths['/chats']!)).toEqual(['get']);
    expect(Object.keys(body.paths['/chats/{chat_id}']!)).toEqual(['patch']);
  });
});

describe('over tRPC', () => {
  it('chats.list and chats.rename answer as the REST paths do', async () => {
    const client = bearerTrpcClient<AgentRouter>(`${rig.agent.url}/trpc`, () => `Bearer ${rig.agent.secret}`);
    rig.model.queue({ text: 'ok' });
    await rig.chat('over-trpc', 'via trpc');
    await until(async () => (await client.chats.list.query({})).chats.some((c) => c.chat_id === 'over-trpc'));
    expect(await client.chats.rename.mutate({ chat_id: 'over-trpc', title: 'Renamed' })).toMatchObject({ chat_id: 'over-trpc', title: 'Renamed' });
    expect((await client.chats.list.query({ limit: 1 })).chats).toHaveLength(1);
    const error = await client.chats.rename.mutate({ chat_id: 'over-trpc', title: 'x'.repeat(81) }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TRPCClientError);
    expect((error as TRPCClientError<AgentRouter>).data).toMatchObject({ code: 'VALIDATION_FAILED', httpStatus: 400 });
    const missing = await client.chats.rename.mutate({ chat_id: 'nope', title: 'x' }).catch((e: unknown) => e);
    expect((missing as TRPCClientError<AgentRouter>).data).toMatchObject({ code: 'CHAT_NOT_FOUND', httpStatus: 404 });
  });
});
