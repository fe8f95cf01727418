/**
 * Small durable facts of the agent's own in `agent_state` (key → text): when the next heartbeat
 * is due, so that an agent woken early (for a scheduled task) keeps its heartbeat where it was
 * instead of running one at every wake. Read at every start, so on the store's plain connection:
 * an ORM query here would load Prisma's query compiler on the start path (server/agent/store.ts).
 */
import type { AgentSql } from './store.js';

export const HEARTBEAT_NEXT_KEY = 'heartbeat_next_at';

export function readState(sql: AgentSql, key: string): string | undefined {
  const row = sql.prepare('SELECT value FROM agent_state WHERE key = ?').get(key) as { value: string } | undefined;
  return row?.value;
}

export function writeState(sql: AgentSql, key: string, value: string): void {
  sql.prepare('INSERT INTO agent_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(key, value);
}

/** A stored time, or undefined when none (or not a time) is stored. */
export function readStoredTime(sql: AgentSql, key: string): Date | undefined {
  const value = readState(sql, key);
  const at = value ? new Date(value) : undefined;
  return at && !Number.isNaN(at.getTime()) ? at : undefined;
}
