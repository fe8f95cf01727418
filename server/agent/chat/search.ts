/**
 * `search_history`: the agent recalls an old chat by words, over the whole history of every chat
 * (including entries a compaction summarised). SQLite FTS5 over user and assistant text
 * (`chat_messages_fts`, kept in sync by triggers: migration history_search), best matches first.
 *
 * The model's query is never FTS syntax: it is cut into words and each word is quoted, so `"`,
 * `NEAR(`, `OR`, `*` or `col:` are searched as text (or dropped as punctuation) and can neither
 * fail the statement nor widen it. Words are OR-ed and ranked by bm25, so a message that shares
 * more (and rarer) words with the query comes first. The message being answered is left out (it
 * holds the very words the model searches for). Given to the owner's chat runs only: never to a
 * Telegram contact (it reads every chat of the owner).
 */
import type { Database, Statement } from 'better-sqlite3';
import { z } from 'zod';
import { defineTool, type AgentToolSet } from '../tools/types.js';

export const SEARCH_LIMIT_DEFAULT = 10;
export const SEARCH_LIMIT_MAX = 50;
/** Words of a query searched at most: a longer one costs more and finds no better. */
const QUERY_MAX_TERMS = 16;

export interface HistoryHit {
  chat_id: string;
  chat_title: string;
  /** Who wrote it: `user` or `agent`. */
  role: 'user' | 'agent';
  at: string;
  /** The matching words in [brackets], with a few words around them. */
  snippet: string;
}

type HitRow = { chatId: string; title: string | null; name: string | null; createdAt: string; snippet: string };

/**
 * The query as an FTS5 expression of quoted words (prefix matches: "lock" finds "locker"), or
 * undefined when it holds no word at all.
 */
export function ftsQuery(query: string): string | undefined {
  const words = query.match(/[\p{L}\p{N}_]+/gu)?.slice(0, QUERY_MAX_TERMS) ?? [];
  // A word holds no `"` (the pattern keeps letters, digits and _); quoting makes it a plain string to FTS5.
  return words.length ? words.map((word) => `"${word}"*`).join(' OR ') : undefined;
}

export class HistorySearch {
  private readonly matches: Statement<[string, string, number], HitRow>;

  constructor(sql: Database) {
    this.matches = sql.prepare(
      `SELECT m.chat_id AS chatId, c.title AS title, m.name AS name, m.created_at AS createdAt,
              snippet(chat_messages_fts, 0, '[', ']', '…', 16) AS snippet
       FROM chat_messages_fts JOIN chat_messages m ON m.id = chat_messages_fts.rowid LEFT JOIN chats c ON c.chat_id = m.chat_id
       WHERE chat_messages_fts MATCH ?
         AND m.id IS NOT (SELECT max(id) FROM chat_messages WHERE chat_id = ? AND type = 'text' AND name = 'user')
       ORDER BY bm25(chat_messages_fts) LIMIT ?`,
    );
  }

  /** `asking`: the chat the search is made from; its latest user message is not a result. */
  search(query: string, asking: string, limit = SEARCH_LIMIT_DEFAULT): HistoryHit[] {
    const expression = ftsQuery(query);
    if (!expression) return [];
    return this.matches.all(expression, asking, Math.min(Math.max(1, limit), SEARCH_LIMIT_MAX)).map((row) => ({
      chat_id: row.chatId,
      chat_title: row.title ?? row.chatId,
      role: row.name === 'user' ? 'user' : 'agent',
      at: new Date(row.createdAt).toISOString(),
      snippet: row.snippet,
    }));
  }
}

export function searchHistoryTool(search: HistorySearch, opts: { chatId: string }): AgentToolSet {
  return {
    search_history: defineTool({
      description:
        'Search every chat you have had with the user (including older messages that were summarised) by words; ' +
        'returns the best matching messages with their chat, who wrote them, when, and a snippet ([matching words] in brackets).',
      inputSchema: z.object({
        query: z.string().min(1).max(500).describe('words to look for, e.g. "dentist appointment"'),
        limit: z.number().int().min(1).max(SEARCH_LIMIT_MAX).optional().describe(`how many results (default ${SEARCH_LIMIT_DEFAULT})`),
      }),
      async execute({ query, limit }) {
        const results = search.search(query, opts.chatId, limit);
        return results.length ? { results } : { results, note: 'No message matches these words.' };
      },
    }),
  };
}
