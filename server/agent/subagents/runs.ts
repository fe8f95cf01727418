/**
 * Subagent runs in `agent.db`: plain functions with explicit inputs (`db`, `now`), no timers.
 *
 * Every end of a run (completion, failure, timeout, stop, interruption) is one conditional
 * update `WHERE status = 'running'`: whoever makes it wins, exactly once, and only the winner
 * announces the end. So a stop racing the run's own completion gives one outcome and one
 * pending message, and a second stop finds the run no longer running (409).
 */
import type { AgentDb, AgentSql } from '../store.js';
import type { SubagentDetail, SubagentRunFields, SubagentStatus, SubagentSummary } from '@contracts/agent/subagents.js';

/** Characters of `result_preview` (spec: bounded); longer results end with `…`. */
export const RESULT_PREVIEW_CHARS = 200;

export interface RunRow {
  id: string;
  label: string;
  task: string;
  persona: string;
  status: string;
  chatId: string;
  startedAt: Date;
  completedAt: Date | null;
  result: string | null;
  error: string | null;
}

export type FinalStatus = Exclude<SubagentStatus, 'running'>;

const epochSeconds = (date: Date) => date.getTime() / 1000;

/** Seconds from start to end, or to `now` while running; millisecond precision, never negative. */
export function durationSeconds(row: Pick<RunRow, 'startedAt' | 'completedAt'>, now: Date): number {
  const end = row.completedAt ?? now;
  return Math.max(0, Math.round(end.getTime() - row.startedAt.getTime())) / 1000;
}

export function resultPreview(result: string | null): string | null {
  if (result === null) return null;
  return result.length > RESULT_PREVIEW_CHARS ? `${result.slice(0, RESULT_PREVIEW_CHARS - 1)}…` : result;
}

function runFields(row: RunRow, now: Date): SubagentRunFields {
  return {
    id: row.id,
    label: row.label,
    task: row.task,
    status: row.status as SubagentStatus,
    chat_id: row.chatId,
    started_at: epochSeconds(row.startedAt),
    completed_at: row.completedAt ? epochSeconds(row.completedAt) : null,
    error: row.error,
    duration: durationSeconds(row, now),
  };
}

export function toSummary(row: RunRow, now: Date): SubagentSummary {
  return { ...runFields(row, now), result_preview: resultPreview(row.result) };
}

export function toDetail(row: RunRow, now: Date): SubagentDetail {
  return { ...runFields(row, now), persona: row.persona, result: row.result };
}

export async function insertRun(db: AgentDb, run: { id: string; label: string; task: string; persona: string; chatId: string; now: Date }): Promise<RunRow> {
  return db.subagentRun.create({
    data: { id: run.id, label: run.label, task: run.task, persona: run.persona, chatId: run.chatId, status: 'running', startedAt: run.now },
  });
}

/** Ends a running run; false when it had already ended (someone else won). */
export async function finishRun(
  db: Pick<AgentDb, 'subagentRun'>,
  id: string,
  end: { status: FinalStatus; result?: string | null; error?: string | null; now: Date },
): Promise<boolean> {
  const { count } = await db.subagentRun.updateMany({
    where: { id, status: 'running' },
    data: { status: end.status, result: end.result ?? null, error: end.error ?? null, completedAt: end.now },
  });
  return count === 1;
}

export function findRun(db: AgentDb, id: string): Promise<RunRow | null> {
  return db.subagentRun.findUnique({ where: { id } });
}

/** Running runs first (newest first), then the others by start time, newest first. */
export async function listRuns(db: AgentDb): Promise<RunRow[]> {
  const [running, ended] = await Promise.all([
    db.subagentRun.findMany({ where: { status: 'running' }, orderBy: [{ startedAt: 'desc' }, { id: 'asc' }] }),
    db.subagentRun.findMany({ where: { status: { not: 'running' } }, orderBy: [{ startedAt: 'desc' }, { id: 'asc' }] }),
  ]);
  return [...running, ...ended];
}

/** Deletes runs that ended more than `retentionMs` before `now`; returns how many. */
export async function purgeRuns(db: AgentDb, now: Date, retentionMs: number): Promise<number> {
  const { count } = await db.subagentRun.deleteMany({
    where: { status: { not: 'running' }, completedAt: { lt: new Date(now.getTime() - retentionMs) } },
  });
  return count;
}

/**
 * Whether any run is stored, asked on the store's plain connection: with none (most agents never
 * start a subagent) there is nothing to interrupt or purge, so no ORM query is made for it and
 * Prisma's query engine stays unloaded (server/agent/store.ts).
 */
export function anyRunStored(sql: AgentSql): boolean {
  return sql.prepare('SELECT 1 FROM subagent_runs LIMIT 1').get() !== undefined;
}

/** At start: runs still `running` belong to a process that is gone (the registry interrupts them). */
export function runningRuns(db: AgentDb): Promise<RunRow[]> {
  return db.subagentRun.findMany({ where: { status: 'running' } });
}
