/**
 * What the chat runtime shares between runs that start or end together: history writes go out
 * in batches (in order, each write settled only once committed), and the workspace's prompt
 * files are read once for concurrent runs without ever serving a read older than the call.
 */
import { rm, writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HistoryWriter, readHistory } from '../../server/agent/chat/history.js';
import { buildSystemPrompt } from '../../server/agent/chat/prompt.js';
import { openAgentStore, type AgentStore } from '../../server/agent/store.js';
import { tempDir } from '../support/servers.js';

let workspace: string;
let store: AgentStore;
beforeAll(async () => {
  workspace = await tempDir('coalescing');
  store = await openAgentStore(workspace);
});
afterAll(async () => {
  await store.close();
  await rm(workspace, { recursive: true, force: true });
});

describe('HistoryWriter', () => {
  it('writes the rows of concurrent runs in order, each committed when its promise settles', async () => {
    const writer = new HistoryWriter(store.db);
    const chats = Array.from({ length: 30 }, (_, i) => `batch-${i}`);
    const writes: Array<Promise<void>> = [];
    for (let n = 0; n < 40; n++) {
      for (const chat of chats) {
        writes.push(n === 0 ? writer.saveUserMessage(chat, 'question', 'r') : writer.saveEntry(chat, 'r', { type: 'text', content: `part ${n}` }));
      }
    }
    const first = chats[0]!;
    await writes[0];
    expect((await readHistory(store.db, first, 100))[0]).toEqual({ type: 'text', content: 'question', name: 'user' });
    await Promise.all(writes);
    for (const chat of chats) {
      const history = await readHistory(store.db, chat, 100);
      expect(history).toEqual([{ type: 'text', content: 'question', name: 'user' }, ...Array.from({ length: 39 }, (_, i) => ({ type: 'text', content: `part ${i + 1}` }))]);
    }
  });

  it('writes tool_use and file entries as history shows them', async () => {
    const writer = new HistoryWriter(store.db);
    await Promise.all([
      writer.saveEntry('kinds', 'r', { type: 'tool_use', name: 'send_file', input: '{"path":"a.txt"}' }),
      writer.saveEntry('kinds', 'r', { type: 'file', path: 'a.txt', caption: 'here' }),
      writer.saveEntry('kinds', 'r', { type: 'text', content: 'partial', cut: true }),
    ]);
    expect(await readHistory(store.db, 'kinds', 10)).toEqual([
      { type: 'tool_use', name: 'send_file', input: '{"path":"a.txt"}' },
      { type: 'file', path: 'a.txt' },
      { type: 'text', content: 'partial', cut: true },
    ]);
  });
});

describe('buildSystemPrompt', () => {
  const build = () => buildSystemPrompt({ name: 'Ada', workspace, toolNames: [] });

  it('shares reads between concurrent calls, and a call never gets a read that began before it', async () => {
    await writeFile(`${workspace}/SOUL.md`, 'version one');
    const early = build();
    // Written while the first read may still run: every call made after this must see it.
    await writeFile(`${workspace}/SOUL.md`, 'version two');
    const late = await Promise.all(Array.from({ length: 50 }, build));
    expect(await early).toMatch(/version (one|two)/);
    for (const prompt of late) expect(prompt).toContain('## SOUL.md\nversion two');
  });
});
