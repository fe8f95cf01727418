/**
 * Small durable facts of the agent's own in `agent_state` (key → text): when the next heartbeat
 * is due, so that an agent woken early (for a scheduled task) keeps its heartbeat where it was
 * instead of running one at every wake.
 */
import type { AgentDb } from './store.js';

export const HEARTBEAT_NEXT_KEY = 'heartbeat_next_at';

export async function readState(db: AgentDb, key: string): Promise<string | undefined> {
  return (await db.agentState.findUnique({ where: { key } }))?.value;
}

export async function writeState(db: AgentDb, key: string, value: string): Promise<void> {
  await db.agentState.upsert({ where: { key }, create: { key, value }, update: { value } });
}

/** A stored time, or undefined when none (or not a time) is stored. */
export async function readStoredTime(db: AgentDb, key: string): Promise<Date | undefined> {
  const value = await readState(db, key);
  const at = value ? new Date(value) : undefined;
  return at && !Number.isNaN(at.getTime()) ? at : undefined;
}
