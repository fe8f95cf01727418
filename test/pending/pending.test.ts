/**
 * `GET /pending`: durable, fields as documented (created_at UTC without a zone suffix), oldest
 * first, and collected atomically: 100 concurrent GETs against 1,000 messages deliver each
 * exactly once, also while messages keep arriving. Plus the `onPending` hook.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { utcTimestamp, type StoredPending } from '../../server/agent/pending/store.js';
import { startTestAgent, type TestAgent } from '../support/servers.js';

type Pending = { chat_id: string; content: string; source: string; created_at: string };

let agent: TestAgent;
beforeAll(async () => {
  agent = await startTestAgent();
});
afterAll(() => agent.stop());

async function collect(): Promise<Pending[]> {
  const res = await fetch(`${agent.url}/pending`, { headers: agent.auth });
  expect(res.status).toBe(200);
  return ((await res.json()) as { messages: Pending[] }).messages;
}

describe('GET /pending', () => {
  it('answers an empty list when nothing is pending', async () => {
    expect(await collect()).toEqual([]);
  });

  it('returns the messages oldest first with the documented fields, then they are gone', async () => {
    const { pending } = agent.services;
    await pending.add({ chatId: 'web-1', content: 'first', source: 'heartbeat', now: new Date('2026-03-04T05:06:07.089Z') });
    await pending.add({ chatId: 'telegram:42', content: 'second', source: 'subagent' });
    const messages = await collect();
    expect(messages).toEqual([
      { chat_id: 'web-1', content: 'first', source: 'heartbeat', created_at: '2026-03-04T05:06:07.089' },
      { chat_id: 'telegram:42', content: 'second', source: 'subagent', created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}$/) },
    ]);
    for (const m of messages) expect(Object.keys(m).sort()).toEqual(['chat_id', 'content', 'created_at', 'source']);
    // UTC: the timestamp read as UTC is within a minute of now.
    expect(Math.abs(Date.parse(`${messages[1]!.created_at}Z`) - Date.now())).toBeLessThan(60_000);
    expect(await collect()).toEqual([]);
  });

  it('keeps messages across a restart (stored in agent.db)', async () => {
    const first = await startTestAgent();
    await first.services.pending.add({ chatId: 'c', content: 'survives', source: 'heartbeat' });
    await first.stop({ keepWorkspace: true });
    const second = await startTestAgent({ AGENT_WORKSPACE: first.workspace });
    try {
      const res = await fetch(`${second.url}/pending`, { headers: second.auth });
      expect(((await res.json()) as { messages: Pending[] }).messages).toEqual([expect.objectContaining({ content: 'survives' })]);
    } finally {
      await second.stop();
    }
  });

  it('100 concurrent GETs against 1,000 messages deliver each exactly once', async () => {
    const { db } = agent.services.store;
    await db.pendingMessage.createMany({ data: Array.from({ length: 1000 }, (_, i) => ({ chatId: `c${i % 7}`, content: `m${i}`, source: 'subagent' })) });
    const answers = await Promise.all(Array.from({ length: 100 }, () => collect()));
    const delivered = answers.flat().map((m) => m.content);
    expect(delivered).toHaveLength(1000);
    expect(new Set(delivered).size).toBe(1000);
    for (const answer of answers) {
      const order = answer.map((m) => Number(m.content.slice(1)));
      expect(order).toEqual([...order].sort((a, b) => a - b));
    }
    expect(await agent.services.pending.count()).toBe(0);
  });

  it('messages added during concurrent collections are neither lost nor duplicated', async () => {
    const { pending } = agent.services;
    const adds = (async () => {
      for (let i = 0; i < 300; i++) await pending.add({ chatId: 'live', content: `n${i}`, source: 'heartbeat' });
    })();
    const answers: Pending[][] = [];
    let finished = false;
    void adds.then(() => (finished = true));
    const readers = Array.from({ length: 10 }, async () => {
      while (!finished) answers.push(await collect());
    });
    await Promise.all([adds, ...readers]);
    answers.push(await collect());
    const delivered = answers.flat().map((m) => m.content);
    expect(delivered).toHaveLength(300);
    expect(new Set(delivered).size).toBe(300);
  });

  it('needs the agent secret', async () => {
    const res = await fetch(`${agent.url}/pending`);
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ detail: expect.any(String), code: 'INVALID_AGENT_SECRET' });
  });
});

describe('onPending hook (for deliveries elsewhere, e.g. Telegram)', () => {
  it('fires after a message is stored; unsubscribe stops it; remove() takes one message out of GET /pending', async () => {
    const { pending } = agent.services;
    const seen: StoredPending[] = [];
    const off = pending.onPending((m) => seen.push(m));
    const stored = await pending.add({ chatId: 'telegram:7', content: 'for telegram', source: 'heartbeat' });
    await pending.add({ chatId: 'web', content: 'for the web', source: 'heartbeat' });
    expect(seen.map((m) => m.content)).toEqual(['for telegram', 'for the web']);
    expect(seen[0]).toEqual(stored);
    expect(await pending.count()).toBe(2);
    expect(await pending.remove(stored.id)).toBe(true);
    expect(await pending.remove(stored.id)).toBe(false);
    off();
    await pending.add({ chatId: 'web', content: 'unseen', source: 'heartbeat' });
    expect(seen).toHaveLength(2);
    expect((await collect()).map((m) => m.content)).toEqual(['for the web', 'unseen']);
  });

  it('a throwing listener does not break the write', async () => {
    const off = agent.services.pending.onPending(() => {
      throw new Error('listener bug');
    });
    await expect(agent.services.pending.add({ chatId: 'c', content: 'x', source: 'heartbeat' })).resolves.toMatchObject({ content: 'x' });
    off();
    expect(await collect()).toHaveLength(1);
  });

  it('utcTimestamp drops the zone suffix', () => {
    expect(utcTimestamp(new Date('2026-11-22T20:04:33.208Z'))).toBe('2026-11-22T20:04:33.208');
  });
});
