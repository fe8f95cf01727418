/**
 * A kill -9 of the agent in the middle of a run: after a restart on the same workspace the
 * history is readable and consistent (user message and completed entries kept; at most the
 * in-flight fragment lost), and no run is left "active".
 */
import { expect, it } from 'vitest';
import { openSse, takeEvents } from '../support/sse.js';
import { restartableAgentSuite } from '../support/agent-process.js';

const suite = restartableAgentSuite('agent-crash');
const { auth } = suite;

it('keeps a readable, consistent history after a kill -9 mid-run', async () => {
  const first = await suite.start();
  suite.model.queue(
    { text: 'I will write it down.', toolCalls: [{ name: 'write_file', args: { path: 'memo.txt', content: 'remember' } }] },
    { text: Array.from({ length: 200 }, (_, i) => `w${i} `), delayMs: 20 },
  );
  const stream = await openSse(`${first.url}/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...auth },
    body: JSON.stringify({ message: 'write a memo', chat_id: 'crash' }),
  });
  const seen = await takeEvents(stream, 5); // text, tool_use, then streaming text of step 2
  expect(seen.map((f) => f.data.type)).toEqual(['text', 'tool_use', 'text', 'text', 'text']);
  first.child.kill('SIGKILL');
  await new Promise((resolve) => first.child.once('exit', resolve));
  stream.close();

  const second = await suite.start();
  try {
    const history = await fetch(`${second.url}/chat/crash/history`, { headers: auth }).then((r) => r.json());
    expect(history).toEqual({
      messages: [
        { type: 'text', content: 'write a memo', name: 'user', message_id: expect.any(String) },
        { type: 'text', content: 'I will write it down.' },
        { type: 'tool_use', name: 'write_file', input: '{"path":"memo.txt","content":"remember"}' },
      ],
    });
    expect(await fetch(`${second.url}/chat/crash/active`, { headers: auth }).then((r) => r.json())).toEqual({ active: false, user_message: '' });
    const reconnect = await fetch(`${second.url}/chat/crash/stream`, { headers: auth }).then((r) => r.text());
    expect(reconnect.trim()).toBe('data: {"type":"done"}');
    // The chat goes on after the restart.
    suite.model.queue({ text: 'back again' });
    const next = await openSse(`${second.url}/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth },
      body: JSON.stringify({ message: 'still there?', chat_id: 'crash' }),
    });
    expect((await takeEvents(next, 2)).map((f) => f.data)).toEqual([{ type: 'text', content: 'back again' }, { type: 'done' }]);
  } finally {
    second.child.kill('SIGTERM');
    await new Promise((resolve) => second.child.once('exit', resolve));
  }
}, 60_000);
