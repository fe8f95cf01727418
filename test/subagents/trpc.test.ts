/** The subagent and pending procedures over tRPC (what the web client uses), and the OpenAPI document. */
import { createTRPCClient, httpLink, TRPCClientError } from '@trpc/client';
import superjson from 'superjson';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentRouter } from '../../server/agent/router.js';
import { startChatRig, until, type ChatRig } from '../chat/helpers.js';
import { spawnVia } from './helpers.js';

let rig: ChatRig;
let client: ReturnType<typeof createTRPCClient<AgentRouter>>;

beforeAll(async () => {
  rig = await startChatRig();
  client = createTRPCClient<AgentRouter>({
    links: [httpLink({ url: `${rig.agent.url}/trpc`, transformer: superjson, headers: { authorization: rig.agent.auth.authorization } })],
  });
});
afterAll(() => rig.stop());

const codeOf = (error: unknown) => (error instanceof TRPCClientError ? (error.data as { code?: string } | undefined)?.code : undefined);

describe('subagents and pending over tRPC', () => {
  it('list, get and stop answer as the REST paths do; errors carry the same codes', async () => {
    const [id] = await spawnVia(rig, 'tr', [{ label: 'trpc', task: 'Hang.' }], () => ({ text: 'working', hang: true }));
    await until(() => rig.model.openStreams() === 1);
    const list = await client.subagents.list.query();
    expect(list).toEqual({ subagents: [expect.objectContaining({ id, status: 'running' })] });
    const rest = (await rig.get<typeof list>('/subagents')).body;
    expect({ ...rest.subagents[0], duration: 0 }).toEqual({ ...list.subagents[0], duration: 0 }); // duration grows while running
    expect(await client.subagents.get.query({ run_id: id! })).toMatchObject({ id, status: 'running', persona: '' });
    expect(await client.subagents.stop.mutate({ run_id: id! })).toEqual({ status: 'ok', run_id: id, message: expect.stringContaining(id!) });
    expect(codeOf(await client.subagents.stop.mutate({ run_id: id! }).catch((e: unknown) => e))).toBe('SUBAGENT_NOT_RUNNING');
    expect(codeOf(await client.subagents.get.query({ run_id: 'nope' }).catch((e: unknown) => e))).toBe('SUBAGENT_NOT_FOUND');
    const error = await client.subagents.stop.mutate({ run_id: 'nope' }).catch((e: unknown) => e);
    expect((error as TRPCClientError<AgentRouter>).data?.httpStatus).toBe(404);
  });

  it('pending.collect returns the messages once', async () => {
    await until(async () => (await rig.agent.services.pending.count()) > 0);
    const first = await client.pending.collect.mutate();
    expect(first.messages).toEqual([expect.objectContaining({ chat_id: 'tr', source: 'subagent' })]);
    expect(await client.pending.collect.mutate()).toEqual({ messages: [] });
  });

  it('the OpenAPI document lists the four paths', async () => {
    const doc = (await rig.get<{ paths: Record<string, Record<string, unknown>> }>('/openapi.json')).body;
    expect(Object.keys(doc.paths['/pending']!)).toContain('get');
    expect(Object.keys(doc.paths['/subagents']!)).toContain('get');
    expect(Object.keys(doc.paths['/subagents/{run_id}']!)).toContain('get');
    expect(Object.keys(doc.paths['/subagents/{run_id}/stop']!)).toContain('post');
  });

  it('wrong methods are 405 on the documented paths', async () => {
    const res = await fetch(`${rig.agent.url}/pending`, { method: 'POST', headers: rig.agent.auth });
    expect(res.status).toBe(405);
    expect((await fetch(`${rig.agent.url}/subagents/x/stop`, { headers: rig.agent.auth })).status).toBe(405);
  });
});
