/**
 * A restart during a subagent run: the run ends as `failed` with error `interrupted`, announced
 * to its chat. Both ways: a kill -9 of the agent process (the next start marks the run), and a
 * graceful stop (the run is interrupted on the way down). And the end of a run and its
 * announcement are one transaction: when the announcement cannot be stored, the run is not
 * recorded as ended either, so the next start still interrupts and announces it.
 */
import path from 'node:path';
import Database from 'better-sqlite3';
import { expect, it } from 'vitest';
import { startTestAgent } from '../support/servers.js';
import { openSse, readFrames } from '../support/sse.js';
import { until } from '../chat/helpers.js';
import { isSubagent, spawnResponder } from './helpers.js';
import { restartableAgentSuite } from '../support/agent-process.js';

const suite = restartableAgentSuite('agent-subagent-restart', (model) =>
  model.respond(spawnResponder([{ label: 'long job', task: 'Work for a long time.' }], () => ({ text: 'working', hang: true }))),
);
const { auth } = suite;

async function delegate(url: string, chatId: string): Promise<string> {
  const stream = await openSse(`${url}/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...auth },
    body: JSON.stringify({ message: 'delegate', chat_id: chatId }),
  });
  await readFrames(stream);
  let id = '';
  await until(async () => {
    const list = (await fetch(`${url}/subagents`, { headers: auth }).then((r) => r.json())) as {
      subagents: Array<{ id: string; status: string; chat_id: string }>;
    };
    id = list.subagents.find((s) => s.status === 'running' && s.chat_id === chatId)?.id ?? '';
    return id !== '' && suite.model.openStreams() > 0;
  });
  return id;
}

it('a kill -9 during a run: after the restart the run is failed / interrupted and announced', async () => {
  const first = await suite.start();
  const id = await delegate(first.url, 'killed');
  first.child.kill('SIGKILL');
  await new Promise((resolve) => first.child.once('exit', resolve));

  const second = await suite.start();
  try {
    const detail = await fetch(`${second.url}/subagents/${id}`, { headers: auth }).then((r) => r.json());
    expect(detail).toMatchObject({ id, status: 'failed', error: 'interrupted', completed_at: expect.any(Number) });
    const pending = (await fetch(`${second.url}/pending`, { headers: auth }).then((r) => r.json())) as {
      messages: Array<{ chat_id: string; source: string; content: string }>;
    };
    expect(pending.messages).toEqual([expect.objectContaining({ chat_id: 'killed', source: 'subagent', content: expect.stringContaining('interrupted') })]);
    const stop = await fetch(`${second.url}/subagents/${id}/stop`, { method: 'POST', headers: auth });
    expect(stop.status).toBe(409);
  } finally {
    second.child.kill('SIGTERM');
    await new Promise((resolve) => second.child.once('exit', resolve));
  }
}, 60_000);

it('a graceful stop during a run interrupts it the same way', async () => {
  const agent = await startTestAgent(suite.env());
  const id = await delegate(agent.url, 'graceful');
  await agent.stop({ keepWorkspace: true });
  const again = await startTestAgent({ AGENT_WORKSPACE: suite.workspace, MODEL: suite.model.modelSpec });
  try {
    const detail = await fetch(`${again.url}/subagents/${id}`, { headers: again.auth }).then((r) => r.json());
    expect(detail).toMatchObject({ id, status: 'failed', error: 'interrupted' });
    const pending = (await fetch(`${again.url}/pending`, { headers: again.auth }).then((r) => r.json())) as {
      messages: Array<{ chat_id: string; content: string }>;
    };
    expect(pending.messages).toEqual([expect.objectContaining({ chat_id: 'graceful', content: expect.stringContaining('interrupted') })]);
  } finally {
    await again.stop({ keepWorkspace: true });
  }
}, 30_000);

it('a run whose announcement cannot be stored is not recorded as ended: the next start announces it', async () => {
  const agent = await startTestAgent(suite.env());
  // The store refuses announcements, as a crash right after the run's end was written would lose one.
  const db = new Database(path.join(agent.stateDir, 'agent.db'));
  db.exec("CREATE TRIGGER refuse_pending BEFORE INSERT ON pending_messages BEGIN SELECT RAISE(ABORT, 'refused'); END");
  let id = '';
  try {
    suite.model.respond(spawnResponder([{ label: 'quick job', task: 'Be quick.' }], () => ({ text: 'quick result' })));
    await readFrames(
      await openSse(`${agent.url}/chat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...auth },
        body: JSON.stringify({ message: 'delegate', chat_id: 'refused' }),
      }),
    );
    await until(async () => {
      const list = (await fetch(`${agent.url}/subagents`, { headers: auth }).then((r) => r.json())) as { subagents: Array<{ id: string; chat_id: string }> };
      id = list.subagents.find((s) => s.chat_id === 'refused')?.id ?? '';
      return id !== '' && suite.model.requests.some(isSubagent) && suite.model.openStreams() === 0;
    });
    // The subagent's model call is over; its end could not be announced, so it was not recorded.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const detail = await fetch(`${agent.url}/subagents/${id}`, { headers: auth }).then((r) => r.json());
    expect(detail).toMatchObject({ id, status: 'running' });
  } finally {
    db.exec('DROP TRIGGER refuse_pending');
    db.close();
    await agent.stop({ keepWorkspace: true });
  }
  const again = await startTestAgent({ AGENT_SECRET: suite.secret, AGENT_WORKSPACE: suite.workspace, MODEL: suite.model.modelSpec });
  try {
    expect(await fetch(`${again.url}/subagents/${id}`, { headers: auth }).then((r) => r.json())).toMatchObject({ id, status: 'failed', error: 'interrupted' });
    const pending = (await fetch(`${again.url}/pending`, { headers: auth }).then((r) => r.json())) as { messages: Array<{ chat_id: string; content: string }> };
    expect(pending.messages).toEqual([expect.objectContaining({ chat_id: 'refused', content: expect.stringContaining('interrupted') })]);
  } finally {
    await again.stop({ keepWorkspace: true });
  }
}, 30_000);
