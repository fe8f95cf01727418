/** The messenger endpoints without a bot token, over REST (both prefixes) and tRPC. */
import { createTRPCClient, httpLink, TRPCClientError } from '@trpc/client';
import superjson from 'superjson';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentRouter } from '../../server/agent/router.js';
import { startTestAgent, type TestAgent } from '../support/servers.js';

let agent: TestAgent;
let client: ReturnType<typeof createTRPCClient<AgentRouter>>;

async function call(method: string, path: string, body?: unknown, raw?: string) {
  const res = await fetch(`${agent.url}${path}`, {
    method,
    headers: { ...agent.auth, ...(body !== undefined || raw !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: raw ?? (body !== undefined ? JSON.stringify(body) : undefined),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

beforeAll(async () => {
  agent = await startTestAgent();
  client = createTRPCClient<AgentRouter>({ links: [httpLink({ url: `${agent.url}/trpc`, transformer: superjson, headers: agent.auth })] });
  const db = agent.services.store.db;
  await db.contact.create({ data: { telegramId: '11', username: 'ann', displayName: 'Ann A', status: 'pending' } });
  await db.contact.create({ data: { telegramId: '12', username: '', displayName: 'Ben', status: 'allowed' } });
  await db.contact.create({ data: { telegramId: '13', username: 'cy', displayName: 'Cy', status: 'blocked' } });
});
afterAll(() => agent.stop());

const PREFIXES = ['/messenger', '/telegram'] as const;

describe.each(PREFIXES)('%s over REST, no bot token', (prefix) => {
  it('status: not connected, empty names', async () => {
    expect(await call('GET', `${prefix}/status`)).toEqual({ status: 200, body: { connected: false, bot_username: '', bot_name: '' } });
  });

  it('contacts: all, and filtered by status', async () => {
    const all = await call('GET', `${prefix}/contacts`);
    expect(all.status).toBe(200);
    expect((all.body.contacts as Array<{ telegram_id: string }>).map((c) => c.telegram_id).sort()).toEqual(['11', '12', '13']);
    for (const status of ['allowed', 'pending', 'blocked']) {
      const { body } = await call('GET', `${prefix}/contacts?status=${status}`);
      expect((body.contacts as Array<{ status: string }>).every((c) => c.status === status)).toBe(true);
      expect(body.contacts).toHaveLength(1);
    }
    expect((await call('GET', `${prefix}/contacts?status=allowed`)).body).toEqual({
      contacts: [{ telegram_id: '12', username: '', display_name: 'Ben', status: 'allowed' }],
    });
  });

  it('contacts: an invalid status filter is 400', async () => {
    for (const bad of ['friends', 'ALLOWED', '', 'allowed&status=blocked']) {
      const res = await call('GET', `${prefix}/contacts?status=${bad}`);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: expect.any(String), detail: expect.any(String) });
    }
  });

  it('PATCH answers the updated contact and sets each status', async () => {
    for (const status of ['allowed', 'blocked', 'pending']) {
      expect(await call('PATCH', `${prefix}/contacts/11`, { status })).toEqual({
        status: 200,
        body: { telegram_id: '11', username: 'ann', display_name: 'Ann A', status },
      });
    }
  });

  it('PATCH: bad status, missing body, malformed id → 400; unknown id → 404', async () => {
    expect((await call('PATCH', `${prefix}/contacts/11`, { status: 'friend' })).status).toBe(400);
    expect((await call('PATCH', `${prefix}/contacts/11`, {})).status).toBe(400);
    expect((await call('PATCH', `${prefix}/contacts/11`, undefined, '{bad')).status).toBe(400);
    expect((await call('PATCH', `${prefix}/contacts/abc`, { status: 'allowed' })).status).toBe(400);
    expect(await call('PATCH', `${prefix}/contacts/999`, { status: 'allowed' })).toMatchObject({
      status: 404,
      body: { code: 'CONTACT_NOT_FOUND', detail: expect.any(String) },
    });
  });

  it('DELETE: unknown → 404, malformed → 400', async () => {
    expect(await call('DELETE', `${prefix}/contacts/999`)).toMatchObject({ status: 404, body: { code: 'CONTACT_NOT_FOUND' } });
    expect((await call('DELETE', `${prefix}/contacts/1e3`)).status).toBe(400);
  });

  it('needs the agent secret', async () => {
    const res = await fetch(`${agent.url}${prefix}/contacts`);
    expect(res.status).toBe(401);
  });
});

describe('messenger and telegram over tRPC', () => {
  it('the same procedures under both names', async () => {
    expect(await client.messenger.status.query()).toEqual({ connected: false, bot_username: '', bot_name: '' });
    expect(await client.telegram.status.query()).toEqual({ connected: false, bot_username: '', bot_name: '' });
    expect((await client.telegram.contacts.query({ status: 'blocked' })).contacts.map((c) => c.telegram_id)).toEqual(['13']);
    expect(await client.messenger.updateContact.mutate({ telegram_id: '13', status: 'allowed' })).toMatchObject({ telegram_id: '13', status: 'allowed' });
    expect((await client.messenger.contacts.query({})).contacts.find((c) => c.telegram_id === '13')?.status).toBe('allowed');
  });

  it('errors carry the same codes', async () => {
    const notFound = await client.telegram.deleteContact.mutate({ telegram_id: '999' }).catch((e: unknown) => e);
    expect(notFound).toBeInstanceOf(TRPCClientError);
    expect((notFound as TRPCClientError<AgentRouter>).data).toMatchObject({ code: 'CONTACT_NOT_FOUND', httpStatus: 404 });
    const bad = await client.messenger.contacts.query({ status: 'nope' as never }).catch((e: unknown) => e);
    expect((bad as TRPCClientError<AgentRouter>).data).toMatchObject({ httpStatus: 400 });
  });

  it('delete over one name, gone under the other; contacts persist in agent.db', async () => {
    expect(await client.telegram.deleteContact.mutate({ telegram_id: '13' })).toEqual({ status: 'ok', telegram_id: '13' });
    expect((await call('GET', '/messenger/contacts')).body.contacts).toHaveLength(2);
    expect(await agent.services.store.db.contact.count()).toBe(2);
  });
});

describe('OpenAPI', () => {
  it('documents both prefixes', async () => {
    const { body } = await call('GET', '/openapi.json');
    const paths = Object.keys(body.paths as object);
    for (const prefix of PREFIXES) {
      expect(paths).toEqual(expect.arrayContaining([`${prefix}/status`, `${prefix}/contacts`, `${prefix}/contacts/{telegram_id}`]));
    }
  });
});
