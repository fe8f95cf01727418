/**
 * Chat history in `agent.db`: the user message at once, assistant entries as they complete.
 * History entries are user text (`name: 'user'`), assistant text (no name; `cut` when a run was
 * interrupted), `tool_use`, and `file` with only its path.
 */
import type { AgentDb } from '../store.js';
import type { ContextMessage, HistoryEntry } from './loop.js';
import type { ChatEvent } from './schemas.js';

type Row = { type: string; name: string | null; content: string | null; toolName: string | null; input: string | null; path: string | null; cut: boolean };

export async function saveUserMessage(db: AgentDb, chatId: string, content: string, runId: string): Promise<void> {
  await db.chatMessage.create({ data: { chatId, type: 'text', name: 'user', content, runId } });
}

export async function saveEntry(db: AgentDb, chatId: string, runId: string, entry: HistoryEntry): Promise<void> {
  switch (entry.type) {
    case 'text':
      await db.chatMessage.create({ data: { chatId, runId, type: 'text', content: entry.content, cut: entry.cut ?? false } });
      return;
    case 'tool_use':
      await db.chatMessage.create({ data: { chatId, runId, type: 'tool_use', toolName: entry.name, input: entry.input } });
      return;
    case 'file':
      await db.chatMessage.create({ data: { chatId, runId, type: 'file', path: entry.path, content: entry.caption } });
      return;
  }
}

function toEvent(row: Row): ChatEvent | undefined {
  switch (row.type) {
    case 'text':
      if (row.name === 'user') return { type: 'text', content: row.content ?? '', name: 'user' };
      return row.cut ? { type: 'text', content: row.content ?? '', cut: true } : { type: 'text', content: row.content ?? '' };
    case 'tool_use':
      return { type: 'tool_use', name: row.toolName ?? '', input: row.input ?? '{}' };
    case 'file':
      return { type: 'file', path: row.path ?? '' };
    default:
      return undefined;
  }
}

async function lastRows(db: AgentDb, chatId: string, limit: number): Promise<Row[]> {
  const rows = await db.chatMessage.findMany({
    where: { chatId },
    orderBy: { id: 'desc' },
    take: limit,
    select: { type: true, name: true, content: true, toolName: true, input: true, path: true, cut: true },
  });
  return rows.reverse();
}

/** The last `limit` entries, oldest first. */
export async function readHistory(db: AgentDb, chatId: string, limit: number): Promise<ChatEvent[]> {
  return (await lastRows(db, chatId, limit)).map(toEvent).filter((e): e is ChatEvent => e !== undefined);
}

export async function deleteHistory(db: AgentDb, chatId: string): Promise<number> {
  const { count } = await db.chatMessage.deleteMany({ where: { chatId } });
  return count;
}

/**
 * The model's view of the recent history: user and assistant text, consecutive entries of one
 * role merged, starting at a user message. Tool calls are not replayed (their results are not
 * kept); the assistant's text around them carries what matters.
 */
export async function modelContext(db: AgentDb, chatId: string, entries: number): Promise<ContextMessage[]> {
  const messages: ContextMessage[] = [];
  for (const row of await lastRows(db, chatId, Math.max(1, entries))) {
    if (row.type !== 'text' || !row.content) continue;
    const role = row.name === 'user' ? 'user' : 'assistant';
    const content = row.cut ? `${row.content} …(interrupted)` : row.content;
    const last = messages.at(-1);
    if (last?.role === role) last.content += `\n\n${content}`;
    else if (messages.length || role === 'user') messages.push({ role, content });
  }
  return messages;
}
