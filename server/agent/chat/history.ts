/**
 * Chat history in `agent.db`: the user message at once, assistant entries as they complete.
 * History entries are user text (`name: 'user'`), assistant text (no name; `cut` when a run was
 * interrupted), `tool_use`, and `file` with only its path.
 */
import type { Prisma } from '../../generated/agent/client.js';
import type { AgentDb } from '../store.js';
import type { ContextMessage, HistoryEntry } from './loop.js';
import type { ChatEvent } from './schemas.js';

type Row = { type: string; name: string | null; content: string | null; toolName: string | null; input: string | null; path: string | null; cut: boolean };

type NewRow = Prisma.ChatMessageCreateManyInput;

/** Rows written in one statement at most (SQLite bounds the parameters of a statement). */
const MAX_BATCH_ROWS = 500;

/**
 * The history writes of every run, batched: rows queued while the previous batch is written (or
 * within the same turn of the event loop) go to SQLite together in one `createMany`, in queue
 * order. With hundreds of streaming chats, runs start and end together; one statement per row
 * held the event loop long enough to delay every other chat's events.
 *
 * Each write resolves once its row is committed, so a caller that awaits it (the user message,
 * a run's last entry before `done`) knows it survives a crash.
 */
export class HistoryWriter {
  private batch: { rows: NewRow[]; written: Promise<void> } | undefined;
  private tail: Promise<unknown> = Promise.resolve();

  constructor(private readonly db: AgentDb) {}

  saveUserMessage(chatId: string, content: string, runId: string): Promise<void> {
    return this.write({ chatId, type: 'text', name: 'user', content, runId });
  }

  saveEntry(chatId: string, runId: string, entry: HistoryEntry): Promise<void> {
    switch (entry.type) {
      case 'text':
        return this.write({ chatId, runId, type: 'text', content: entry.content, cut: entry.cut ?? false });
      case 'tool_use':
        return this.write({ chatId, runId, type: 'tool_use', toolName: entry.name, input: entry.input });
      case 'file':
        return this.write({ chatId, runId, type: 'file', path: entry.path, content: entry.caption });
    }
  }

  private write(row: NewRow): Promise<void> {
    if (!this.batch || this.batch.rows.length >= MAX_BATCH_ROWS) {
      const rows: NewRow[] = [];
      // Batches are written one after the other; a failed batch does not stop the next.
      const written = this.tail.then(
        () => this.flush(rows),
        () => this.flush(rows),
      );
      this.batch = { rows, written };
      this.tail = written;
    }
    this.batch.rows.push(row);
    return this.batch.written;
  }

  private async flush(rows: NewRow[]): Promise<void> {
    // Let the rest of this turn queue its rows too.
    await new Promise(setImmediate);
    if (this.batch?.rows === rows) this.batch = undefined;
    await this.db.chatMessage.createMany({ data: rows });
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
