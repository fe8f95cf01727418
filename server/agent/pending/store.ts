/**
 * Pending (proactive) messages: written by the heartbeat and by subagents, held durably in
 * `agent.db` until `GET /pending` collects them.
 *
 * Collecting is one `DELETE … RETURNING` statement: SQLite runs it atomically, so of two
 * concurrent collections each message goes to exactly one of them, and a message added while
 * one runs is either in its answer or left for the next (never lost, never returned twice).
 *
 * Hook for other deliveries (the Telegram integration delivers `telegram:<id>` chats itself):
 * `onPending(listener)` is called after each message is stored, with the stored message and its
 * row id; it returns an unsubscribe function. A listener that delivers a message elsewhere may
 * call `remove(id)` so that `GET /pending` does not hand it out as well (`remove` answers false
 * when a collection got there first, in which case the listener should not deliver it).
 * Listeners run synchronously after the insert; their errors are logged, never thrown back.
 */
import { EventEmitter } from 'node:events';
import type { Logger } from '../../common/log.js';
import type { AgentDb } from '../store.js';
import type { PendingMessage } from '@contracts/agent/pending.js';

/** A message as stored, with its row id (for `remove`). */
export interface StoredPending extends PendingMessage {
  id: number;
}

export type PendingListener = (message: StoredPending) => void;

/** UTC ISO 8601 without the zone suffix: `2026-11-22T20:04:33.208`. */
export function utcTimestamp(date: Date): string {
  return date.toISOString().replace(/Z$/, '');
}

function asDate(value: unknown): Date {
  if (value instanceof Date) return value;
  if (typeof value === 'number') return new Date(value);
  const text = String(value);
  // SQLite's CURRENT_TIMESTAMP form `YYYY-MM-DD HH:MM:SS` is UTC.
  return new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(text) ? text : `${text.replace(' ', 'T')}Z`);
}

type Row = { id: number | bigint; chat_id: string; content: string; source: string; created_at: unknown };

const toMessage = (row: Row): StoredPending => ({
  id: Number(row.id),
  chat_id: row.chat_id,
  content: row.content,
  source: row.source,
  created_at: utcTimestamp(asDate(row.created_at)),
});

export interface PendingInput {
  chatId: string;
  content: string;
  source: string;
  now?: Date;
}

/**
 * Stores a message without telling anyone: for callers that store it in a transaction of their
 * own (`db` may be a transaction client), then call `PendingStore.notify` once it committed.
 */
export async function insertPending(db: Pick<AgentDb, 'pendingMessage'>, input: PendingInput): Promise<StoredPending> {
  const row = await db.pendingMessage.create({
    data: { chatId: input.chatId, content: input.content, source: input.source, createdAt: input.now ?? new Date() },
  });
  return { id: row.id, chat_id: row.chatId, content: row.content, source: row.source, created_at: utcTimestamp(row.createdAt) };
}

export class PendingStore {
  private readonly events = new EventEmitter();

  constructor(
    private readonly db: AgentDb,
    private readonly log?: Logger,
  ) {
    this.events.setMaxListeners(0);
  }

  /** Stores a message, then tells the `onPending` listeners. */
  async add(input: PendingInput): Promise<StoredPending> {
    const message = await insertPending(this.db, input);
    this.notify(message);
    return message;
  }

  /** Tells the `onPending` listeners of a message `insertPending` stored (after its transaction committed). */
  notify(message: StoredPending): void {
    for (const listener of this.events.listeners('pending') as PendingListener[]) {
      try {
        listener(message);
      } catch (error) {
        this.log?.error({ err: error }, 'pending listener failed');
      }
    }
  }

  /** Subscribes to new messages; returns the unsubscribe function. */
  onPending(listener: PendingListener): () => void {
    this.events.on('pending', listener);
    return () => this.events.off('pending', listener);
  }

  /** Removes one message (delivered elsewhere); false when it was already collected or removed. */
  async remove(id: number): Promise<boolean> {
    const { count } = await this.db.pendingMessage.deleteMany({ where: { id } });
    return count === 1;
  }

  /** Returns every pending message, oldest first, and removes exactly those: one atomic statement. */
  async collect(): Promise<StoredPending[]> {
    const rows = await this.db.$queryRaw<Row[]>`DELETE FROM pending_messages RETURNING id, chat_id, content, source, created_at`;
    return rows.map(toMessage).sort((a, b) => a.id - b.id);
  }

  /** Messages waiting, without removing them (tests, diagnostics). */
  async count(): Promise<number> {
    return this.db.pendingMessage.count();
  }

  close(): void {
    this.events.removeAllListeners();
  }
}
