/**
 * Chat history in `agent.db`: the user message at once, assistant entries as they complete.
 * History entries are user text (`name: 'user'`), assistant text (no name; `cut` when a run was
 * interrupted), `tool_use`, `file` with only its path, and `error` for the one marker a run
 * leaves behind when it was stopped on request (`content: 'stopped'`, after the partial reply).
 * A `compaction` row holds the model's summary of every entry up to `covers_to` (compaction.ts):
 * the model reads the summary instead of those entries, which stay stored and are shown under it.
 *
 * The list of chats (`chats` table) is kept in the same transactions: a user message adds its
 * chat (titled after it) or moves it to the top; deleting a chat's history removes it.
 *
 * The `chat_messages` table (its schema and migrations are Prisma's) is read and written with
 * prepared statements on the store's own better-sqlite3 connection (`AgentStore.sql`), not
 * through Prisma: every run reads its context and writes at least two rows, and at 500 chats
 * starting together Prisma's client (≈ 1 ms of CPU per query, the SQL itself ≈ 20 µs) held the
 * event loop long enough to delay every other chat's events (bench/chat.ts). See store.ts for
 * why two connections in one thread cannot deadlock.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { Database, Statement } from 'better-sqlite3';
import type { ContextMessage, HistoryEntry } from './loop.js';
import { titleFrom } from '@contracts/agent/chat-limits.js';
import type { ChatEvent, StoredChatEvent } from '@contracts/agent/chat.js';

/** A row of the chat list, timestamps as stored (ISO 8601). */
export interface ChatRow {
  chatId: string;
  title: string;
  createdAt: string;
  updatedAt: string;
}

/** What a run writes: the loop's entries, plus the marker of a run stopped on request. */
export type StoredEntry = HistoryEntry | { type: 'error'; content: string };

/** A turn of the model's context: one role's consecutive text entries, from the entry `firstId`. */
export interface ContextTurn {
  firstId: number;
  role: 'user' | 'assistant';
  content: string;
}

/** What the model reads of a chat: the latest compaction's summary, then the turns after what it covers. */
export interface ChatContext {
  summary?: string;
  turns: ContextTurn[];
}

/**
 * Entries read for the model's context at most. Compaction keeps a chat's context far below this;
 * the bound only matters when compaction cannot run (no summary from the model).
 */
const CONTEXT_MAX_ROWS = 2_000;

type Row = {
  id: number;
  type: string;
  name: string | null;
  content: string | null;
  toolName: string | null;
  input: string | null;
  path: string | null;
  cut: 0 | 1;
  runId: string | null;
};

interface NewRow {
  chatId: string;
  runId: string;
  type: 'text' | 'tool_use' | 'file' | 'error' | 'compaction';
  name: string | null;
  content: string | null;
  toolName: string | null;
  input: string | null;
  path: string | null;
  cut: 0 | 1;
  coversTo: number | null;
  /** As Prisma writes `DateTime` to SQLite. */
  createdAt: string;
}

/**
 * Rows written in one transaction at most, so that one batch never holds the event loop long:
 * a run's text row is a few KiB, and 500 of them (500 chats ending together) took 20 ms in one
 * synchronous transaction, 1.5–2 ms per 32 (about 60 µs a row either way); other chats' events
 * are sent between batches.
 */
const MAX_BATCH_ROWS = 32;
/** How long a write waits, in short asynchronous retries, for a Prisma transaction to let go of the write lock. */
const BUSY_GIVE_UP_MS = 5_000;

const isBusy = (error: unknown) => (error as { code?: unknown } | null)?.code === 'SQLITE_BUSY';

function newRow(chatId: string, runId: string, fields: Partial<NewRow> & Pick<NewRow, 'type'>): NewRow {
  return {
    chatId,
    runId,
    name: null,
    content: null,
    toolName: null,
    input: null,
    path: null,
    cut: 0,
    coversTo: null,
    createdAt: new Date().toISOString().replace('Z', '+00:00'),
    ...fields,
  };
}

function toEvent(row: Row): StoredChatEvent | undefined {
  switch (row.type) {
    case 'text':
      if (row.name === 'user') return { type: 'text', content: row.content ?? '', name: 'user', ...(row.runId ? { message_id: row.runId } : {}) };
      return row.cut ? { type: 'text', content: row.content ?? '', cut: true } : { type: 'text', content: row.content ?? '' };
    case 'tool_use':
      return { type: 'tool_use', name: row.toolName ?? '', input: row.input ?? '{}' };
    case 'file':
      return { type: 'file', path: row.path ?? '' };
    case 'error':
      return { type: 'error', content: row.content ?? '' };
    default:
      return undefined;
  }
}

/** Text entries (oldest first) as turns: consecutive entries of one role merged, from the first user message. */
function mergeTurns(rows: Array<Pick<Row, 'id' | 'name' | 'content' | 'cut'>>): ContextTurn[] {
  const turns: ContextTurn[] = [];
  for (const row of rows) {
    const role = row.name === 'user' ? 'user' : 'assistant';
    const content = row.cut ? `${row.content} …(interrupted)` : (row.content ?? '');
    const last = turns.at(-1);
    if (last?.role === role) last.content += `\n\n${content}`;
    else if (turns.length || role === 'user') turns.push({ firstId: row.id, role, content });
  }
  return turns;
}

/**
 * The history of every chat. Writes are batched: rows queued while the previous batch is
 * written (or within the same turn of the event loop) go to SQLite together in one transaction,
 * in queue order. Each write resolves once its row is committed, so a caller that awaits it (the
 * user message, a run's last entry before `done`) knows it survives a crash.
 */
export class ChatHistory {
  private readonly insertRows: (rows: NewRow[]) => void;
  private readonly lastRowsOf: Statement<[string, number], Row>;
  private readonly lastEntriesOf: Statement<[string, number], Row>;
  private readonly compactionOf: Statement<[string], { content: string; coversTo: number }>;
  private readonly textAfter: Statement<[string, number, number], { id: number; name: string | null; content: string; cut: 0 | 1 }>;
  private readonly anyRowOf: Statement<[string], { one: 1 }>;
  private readonly chatsByActivity: Statement<[number], ChatRow>;
  private readonly chatOf: Statement<[string], ChatRow>;
  private readonly retitle: Statement<[string, string]>;
  private readonly deleteChatAndList: (chatId: string) => number;
  private readonly replaceFromRow: (row: NewRow, messageId: string) => boolean;
  private batch: { rows: NewRow[]; written: Promise<void> } | undefined;
  private tail: Promise<unknown> = Promise.resolve();

  constructor(sql: Database) {
    const insert = sql.prepare<NewRow>(
      `INSERT INTO chat_messages (chat_id, run_id, type, name, content, tool_name, input, path, cut, covers_to, created_at)
       VALUES (@chatId, @runId, @type, @name, @content, @toolName, @input, @path, @cut, @coversTo, @createdAt)`,
    );
    // A chat joins the list with its first user message; later ones only move it up.
    const touchChat = sql.prepare<{ chatId: string; title: string; at: string }>(
      `INSERT INTO chats (chat_id, title, created_at, updated_at) VALUES (@chatId, @title, @at, @at)
       ON CONFLICT (chat_id) DO UPDATE SET updated_at = excluded.updated_at`,
    );
    const insertRow = (row: NewRow) => {
      insert.run(row);
      if (row.type === 'text' && row.name === 'user') touchChat.run({ chatId: row.chatId, title: titleFrom(row.content ?? '') || 'Chat', at: row.createdAt });
    };
    this.insertRows = sql.transaction((rows: NewRow[]) => {
      for (const row of rows) insertRow(row);
    });
    // A user message by its id (the run it started), in this chat only.
    const userRowOf = sql.prepare<[string, string], { id: number }>(
      `SELECT id FROM chat_messages WHERE chat_id = ? AND run_id = ? AND type = 'text' AND name = 'user' ORDER BY id LIMIT 1`,
    );
    const deleteFrom = sql.prepare<[string, number]>('DELETE FROM chat_messages WHERE chat_id = ? AND id >= ?');
    this.replaceFromRow = sql.transaction((row: NewRow, messageId: string) => {
      const from = userRowOf.get(row.chatId, messageId);
      if (!from) return false;
      deleteFrom.run(row.chatId, from.id);
      insertRow(row);
      return true;
    });
    const columns = 'chat_id AS chatId, title, created_at AS createdAt, updated_at AS updatedAt';
    this.chatsByActivity = sql.prepare(`SELECT ${columns} FROM chats ORDER BY updated_at DESC, rowid DESC LIMIT ?`);
    this.chatOf = sql.prepare(`SELECT ${columns} FROM chats WHERE chat_id = ?`);
    this.retitle = sql.prepare('UPDATE chats SET title = ? WHERE chat_id = ?');
    const rowColumns = 'id, type, name, content, tool_name AS toolName, input, path, cut, run_id AS runId';
    this.lastRowsOf = sql.prepare(`SELECT ${rowColumns} FROM chat_messages WHERE chat_id = ? ORDER BY id DESC LIMIT ?`);
    this.lastEntriesOf = sql.prepare(`SELECT ${rowColumns} FROM chat_messages WHERE chat_id = ? AND type != 'compaction' ORDER BY id DESC LIMIT ?`);
    this.compactionOf = sql.prepare(
      `SELECT content, covers_to AS coversTo FROM chat_messages WHERE chat_id = ? AND type = 'compaction' ORDER BY id DESC LIMIT 1`,
    );
    this.textAfter = sql.prepare(
      `SELECT id, name, content, cut FROM chat_messages WHERE chat_id = ? AND type = 'text' AND id > ? AND content != '' ORDER BY id DESC LIMIT ?`,
    );
    const deleteMessages = sql.prepare<[string]>('DELETE FROM chat_messages WHERE chat_id = ?');
    const deleteListed = sql.prepare<[string]>('DELETE FROM chats WHERE chat_id = ?');
    this.deleteChatAndList = sql.transaction((chatId: string) => {
      deleteListed.run(chatId);
      return deleteMessages.run(chatId).changes;
    });
    this.anyRowOf = sql.prepare('SELECT 1 AS one FROM chat_messages WHERE chat_id = ? LIMIT 1');
  }

  /** Whether the chat has any history (a chat id never used, or emptied, has none). */
  has(chatId: string): boolean {
    return this.anyRowOf.get(chatId) !== undefined;
  }

  saveUserMessage(chatId: string, content: string, runId: string): Promise<void> {
    return this.write(newRow(chatId, runId, { type: 'text', name: 'user', content }));
  }

  /**
   * A clear replacement: deletes the user message `messageId` (the run it started) and every
   * entry after it, and saves `content` in its place, in one transaction. False (nothing
   * changed) when `messageId` is not a user message of this chat.
   */
  async replaceFrom(chatId: string, messageId: string, content: string, runId: string): Promise<boolean> {
    // After queued writes: the rows to delete are all in the table.
    await this.tail.catch(() => undefined);
    return this.whenFree(() => this.replaceFromRow(newRow(chatId, runId, { type: 'text', name: 'user', content }), messageId));
  }

  saveEntry(chatId: string, runId: string, entry: StoredEntry): Promise<void> {
    switch (entry.type) {
      case 'text':
        return this.write(newRow(chatId, runId, { type: 'text', content: entry.content, cut: entry.cut ? 1 : 0 }));
      case 'tool_use':
        return this.write(newRow(chatId, runId, { type: 'tool_use', toolName: entry.name, input: entry.input }));
      case 'file':
        return this.write(newRow(chatId, runId, { type: 'file', path: entry.path, content: entry.caption }));
      case 'error':
        return this.write(newRow(chatId, runId, { type: 'error', content: entry.content }));
    }
  }

  /**
   * The last `limit` entries, oldest first. Entries the latest compaction covers are returned
   * inside it (`messages`), in the compaction's place, so a client shows the summary and can
   * expand it to them; older compactions are covered by the latest and not listed.
   */
  read(chatId: string, limit: number): ChatEvent[] {
    const rows = this.lastEntriesOf.all(chatId, limit).reverse();
    const events = (list: Row[]) => list.map(toEvent).filter((e): e is StoredChatEvent => e !== undefined);
    const compaction = this.compactionOf.get(chatId);
    const covered = compaction ? rows.filter((row) => row.id <= compaction.coversTo) : [];
    if (!compaction || !covered.length) return events(rows);
    return [{ type: 'compaction', content: compaction.content, messages: events(covered) }, ...events(rows.slice(covered.length))];
  }

  /**
   * The model's view of the chat: the latest compaction's summary, then the user and assistant
   * text after it, consecutive entries of one role merged, starting at a user message. Tool calls
   * are not replayed (their results are not kept); the assistant's text around them carries what
   * matters.
   */
  context(chatId: string): ChatContext {
    const compaction = this.compactionOf.get(chatId);
    const turns = mergeTurns(this.textAfter.all(chatId, compaction?.coversTo ?? 0, CONTEXT_MAX_ROWS).reverse());
    return compaction ? { summary: compaction.content, turns } : { turns };
  }

  /** Saves the model's summary of every entry up to `coversTo` (an entry id of this chat). */
  saveCompaction(chatId: string, runId: string, summary: string, coversTo: number): Promise<void> {
    return this.write(newRow(chatId, runId, { type: 'compaction', content: summary, coversTo }));
  }

  /** Deletes the chat's entries and takes it off the list; how many entries there were. */
  delete(chatId: string): Promise<number> {
    return this.whenFree(() => this.deleteChatAndList(chatId));
  }

  /** The chats, newest activity first. */
  chats(limit: number): ChatRow[] {
    return this.chatsByActivity.all(limit);
  }

  /** Renames a listed chat; undefined when there is no such chat. */
  async rename(chatId: string, title: string): Promise<ChatRow | undefined> {
    // After queued writes: a chat whose first message is still on its way is renamed, not lost.
    await this.tail.catch(() => undefined);
    const changed = await this.whenFree(() => this.retitle.run(title, chatId).changes);
    return changed ? this.chatOf.get(chatId) : undefined;
  }

  /**
   * The last `entries` entries as context, as `context` merges them, with no summary: a
   * heartbeat's light look at a chat.
   */
  recent(chatId: string, entries: number): ContextMessage[] {
    const texts = this.lastRows(chatId, Math.max(1, entries)).filter((row) => row.type === 'text' && row.content);
    return mergeTurns(texts).map(({ role, content }) => ({ role, content }));
  }

  private lastRows(chatId: string, limit: number): Row[] {
    return this.lastRowsOf.all(chatId, limit).reverse();
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
    await this.whenFree(() => this.insertRows(rows));
  }

  /** Runs a write, retrying after short pauses while another connection holds the write lock. */
  private async whenFree<T>(write: () => T): Promise<T> {
    const started = Date.now();
    for (let pause = 1; ; pause = Math.min(pause * 2, 50)) {
      try {
        return write();
      } catch (error) {
        if (!isBusy(error) || Date.now() - started > BUSY_GIVE_UP_MS) throw error;
        await delay(pause);
      }
    }
  }
}
