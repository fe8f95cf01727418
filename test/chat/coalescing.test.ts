/**
 * What the chat runtime shares between runs that start or end together: history writes go out
 * in batches (in order, each write settled only once committed), and the workspace's prompt
 * files are read once for concurrent runs without ever serving a read older than the call.
 */
import { rm, writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChatHistory } from '../../server/agent/chat/history.js';
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

describe('ChatHistory', () => {
  it('writes the rows of concurrent runs in order, each committed when its promise settles', async () => {
    const writer = new ChatHistory(store.sql);
    const chats = Array.from({ length: 30 }, (_, i) => `batch-${i}`);
    const writes: Array<Promise<void>> = [];
    for (let n = 0; n < 40; n++) {
      for (const chat of chats) {
        writes.push(n === 0 ? writer.saveUserMessage(chat, 'question', 'r') : writer.saveEntry(chat, 'r', { type: 'text', content: `part ${n}` }));
      }
    }
    const first = chats[0]!;
    await writes[0];
    expect(writer.read(first, 100)[0]).toEqual({ type: 'text', content: 'question', name: 'user', message_id: 'r' });
    await Promise.all(writes);
    for (const chat of chats) {
      const history = writer.read(chat, 100);
      expect(history).toEqual([
        { type: 'text', content: 'question', name: 'user', message_id: 'r' },
        ...Array.from({ length: 39 }, (_, i) => ({ type: 'text', content: `part ${i + 1}` })),
      ]);
    }
  });

  it('writes tool_use and file entries as history shows them', async () => {
    const writer = new ChatHistory(store.sql);
    await Promise.all([
      writer.saveEntry('kinds', 'r', { type: 'tool_use', name: 'send_file', input: '{"path":"a.txt"}' }),
      writer.saveEntry('kinds', 'r', { type: 'file', path: 'a.txt', caption: 'here' }),
      writer.saveEntry('kinds', 'r', { type: 'text', content: 'partial', cut: true }),
    ]);
    expect(writer.read('kinds', 10)).toEqual([
      { type: 'tool_use', name: 'send_file', input: '{"path":"a.txt"}' },
      { type: 'file', path: 'a.txt' },
      { type: 'text', content: 'partial', cut: true },
    ]);
  });

  it('rows written here read back through Prisma as Prisma writes them (same columns, same time format)', async () => {
    const writer = new ChatHistory(store.sql);
    await writer.saveEntry('interop', 'run-1', { type: 'text', content: 'cut short', cut: true });
    await store.db.chatMessage.create({ data: { chatId: 'interop', runId: 'run-2', type: 'tool_use', toolName: 'exec', input: '{}' } });
    const rows = await store.db.chatMessage.findMany({ where: { chatId: 'interop' }, orderBy: { id: 'asc' } });
    expect(rows.map(({ runId, type, cut, content, toolName }) => ({ runId, type, cut, content, toolName }))).toEqual([
      { runId: 'run-1', type: 'text', cut: true, content: 'cut short', toolName: null },
      { runId: 'run-2', type: 'tool_use', cut: false, content: null, toolName: 'exec' },
    ]);
    expect(Math.abs(rows[0]!.createdAt.getTime() - Date.now())).toBeLessThan(60_000);
    const raw = store.sql.prepare<[string], { created_at: string }>('SELECT created_at FROM chat_messages WHERE chat_id = ? ORDER BY id').all('interop');
    expect(raw[0]!.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$/);
    expect(raw[0]!.created_at.length).toBe(raw[1]!.created_at.length);
    expect(writer.read('interop', 10)).toEqual([
      { type: 'text', content: 'cut short', cut: true },
      { type: 'tool_use', name: 'exec', input: '{}' },
    ]);
  });

  it('waits for a Prisma transaction holding the write lock, without blocking the event loop, then writes', async () => {
    const writer = new ChatHistory(store.sql);
    let committed = false;
    let write: Promise<void> | undefined;
    let ticks = 0;
    await store.db.$transaction(async (tx) => {
      await tx.chatMessage.create({ data: { chatId: 'locked', type: 'text', name: 'user', content: 'first' } });
      write = writer.saveUserMessage('locked', 'second', 'r').then(() => void (committed = true));
      // The event loop goes on while the write waits for the lock.
      for (let i = 0; i < 20; i++) await new Promise((r) => setTimeout(r, 5)).then(() => ticks++);
      expect(committed).toBe(false);
    });
    await write;
    expect(ticks).toBe(20);
    expect(committed).toBe(true);
    expect(writer.read('locked', 10)).toEqual([
      { type: 'text', content: 'first', name: 'user' },
      { type: 'text', content: 'second', name: 'user', message_id: 'r' },
    ]);
    expect(await writer.delete('locked')).toBe(2);
    expect(writer.read('locked', 10)).toEqual([]);
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
