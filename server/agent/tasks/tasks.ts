/**
 * Scheduled tasks in `agent.db` (docs/agent.md, "Scheduled tasks"): create, list, pause or
 * resume, delete, and what the runner asks — when the next one is due, and which are due now.
 *
 * Limits (the account service sets them per account tier): at most TASKS_MAX tasks that are not
 * done, and recurring ones no closer together than TASK_MIN_INTERVAL. Creations are serialised in
 * this process, so a model that calls `schedule_task` many times in one step (the calls run in
 * parallel) gets exactly as many tasks as the limit leaves room for.
 *
 * A due task is claimed by one conditional update that moves its `next_run_at` on (to the next
 * cron time after now, or to null for a one-shot, which becomes `done`) before its turn runs:
 * a claim that finds the row changed claims nothing, so a task never runs twice, and one missed
 * while the agent was asleep or down (however many times) runs once when it is back.
 */
import { randomBytes } from 'node:crypto';
import { AppError } from '../../common/errors.js';
import type { Task, TaskCreateInput, TaskPatchInput, TaskStatus } from '@contracts/agent/tasks.js';
import type { AgentStore } from '../store.js';
import { checkAt, checkCron, isKnownZone, nextCronRun } from './schedule.js';

export interface TaskLimits {
  /** Tasks not done (active and paused) at once. */
  max: number;
  /** Shortest time between two runs of a recurring task. */
  minIntervalMs: number;
}

/** One-shot tasks that ran are listed this long, then removed. */
const DONE_KEPT_MS = 7 * 24 * 3600 * 1000;

/** A task as the runner works with it. */
export interface TaskRow {
  id: string;
  prompt: string;
  chatId: string;
  at: string | null;
  cron: string | null;
  timezone: string;
  status: string;
  nextRunAt: Date | null;
}

/** A task's own chat, when it was given none. */
export const taskChatId = (taskId: string): string => `task:${taskId}`;

function toWire(row: TaskRow): Task {
  return {
    id: row.id,
    prompt: row.prompt,
    chat_id: row.chatId,
    ...(row.at !== null ? { at: row.at } : {}),
    ...(row.cron !== null ? { cron: row.cron } : {}),
    timezone: row.timezone,
    status: row.status as TaskStatus,
    next_run_at: row.nextRunAt ? row.nextRunAt.toISOString() : null,
  };
}

const notFound = () => new AppError(404, 'TASK_NOT_FOUND', 'No such task');

export class TaskStore {
  /** Creations one at a time: the count and the insert must see each other. */
  private creating: Promise<unknown> = Promise.resolve();
  /** Told whenever what is due next may have changed (the runner re-arms its timer). */
  onChange: () => void = () => undefined;

  private readonly db: AgentStore['db'];
  /**
   * Whether any task is active, asked on the store's plain connection: most agents have none, and
   * the runner's questions at start and on every re-arm then make no ORM query, which would load
   * Prisma's query compiler on an agent's start path (server/agent/store.ts).
   */
  private readonly anyActive: () => boolean;
  private readonly clock: () => Date;
  /** The zone of a task made without one: the user's (zone.ts). */
  private readonly zone: () => string;

  constructor(
    store: Pick<AgentStore, 'db' | 'sql'>,
    private readonly limits: TaskLimits,
    opts: { zone?: () => string; clock?: () => Date } = {},
  ) {
    this.db = store.db;
    const active = store.sql.prepare("SELECT 1 FROM tasks WHERE status = 'active' LIMIT 1");
    this.anyActive = () => active.get() !== undefined;
    this.clock = opts.clock ?? (() => new Date());
    this.zone = opts.zone ?? (() => 'UTC');
  }

  create(input: TaskCreateInput): Promise<Task> {
    const turn = this.creating.then(() => this.createNow(input));
    this.creating = turn.catch(() => undefined);
    return turn;
  }

  private async createNow(input: TaskCreateInput): Promise<Task> {
    const now = this.clock();
    const timezone = input.timezone ?? this.zone();
    const nextRunAt = input.cron !== undefined ? await checkCron(input.cron, timezone, now, this.limits.minIntervalMs) : checkAt(input.at ?? '', now);
    // A one-shot task's zone is only a label (its `at` carries the offset), but a wrong one is refused all the same.
    if (!isKnownZone(timezone)) throw new AppError(400, 'INVALID_SCHEDULE', `Unknown time zone: ${timezone}`);
    const held = await this.db.task.count({ where: { status: { not: 'done' } } });
    if (held >= this.limits.max) {
      throw new AppError(403, 'TASK_LIMIT', `This agent may hold ${this.limits.max} scheduled tasks; delete one first`);
    }
    const id = `task_${randomBytes(8).toString('hex')}`;
    const row = await this.db.task.create({
      data: {
        id,
        prompt: input.prompt,
        chatId: input.chat_id ?? taskChatId(id),
        at: input.at ?? null,
        cron: input.cron?.trim() ?? null,
        timezone,
        status: 'active',
        nextRunAt,
      },
    });
    this.onChange();
    return toWire(row);
  }

  /** Every task, the next due first, then paused and done ones (done ones older than a week are removed first). */
  async list(): Promise<Task[]> {
    await this.db.task.deleteMany({ where: { status: 'done', updatedAt: { lt: new Date(this.clock().getTime() - DONE_KEPT_MS) } } });
    const rows = await this.db.task.findMany({ orderBy: [{ nextRunAt: 'asc' }, { createdAt: 'asc' }] });
    const order = { active: 0, paused: 1, done: 2 } as Record<string, number>;
    return rows.sort((a, b) => (order[a.status] ?? 3) - (order[b.status] ?? 3)).map(toWire);
  }

  async get(id: string): Promise<Task> {
    const row = await this.db.task.findUnique({ where: { id } });
    if (!row) throw notFound();
    return toWire(row);
  }

  /**
   * Pauses or resumes a task, and may change its prompt. Resuming works out the next run from now
   * (a recurring task does not make up for what it missed while paused); a one-shot task whose time
   * passed while paused cannot be resumed (400), and one that ran cannot be changed (409).
   */
  async update(input: TaskPatchInput): Promise<Task> {
    const row = await this.db.task.findUnique({ where: { id: input.id } });
    if (!row) throw notFound();
    if (row.status === 'done') throw new AppError(409, 'TASK_FINISHED', 'This one-shot task has run; create a new one');
    let nextRunAt = row.nextRunAt;
    if (input.status === 'paused') nextRunAt = null;
    else if (row.status === 'paused') {
      const now = this.clock();
      nextRunAt = row.cron !== null ? await checkCron(row.cron, row.timezone, now, this.limits.minIntervalMs) : checkAt(row.at ?? '', now);
    }
    const updated = await this.db.task.update({
      where: { id: input.id },
      data: { status: input.status, nextRunAt, ...(input.prompt !== undefined ? { prompt: input.prompt } : {}) },
    });
    this.onChange();
    return toWire(updated);
  }

  async delete(id: string): Promise<void> {
    const { count } = await this.db.task.deleteMany({ where: { id } });
    if (count === 0) throw notFound();
    this.onChange();
  }

  /** When the next active task is due; undefined when none is. */
  async nextDueAt(): Promise<Date | undefined> {
    if (!this.anyActive()) return undefined;
    const row = await this.db.task.findFirst({
      where: { status: 'active', nextRunAt: { not: null } },
      orderBy: { nextRunAt: 'asc' },
      select: { nextRunAt: true },
    });
    return row?.nextRunAt ?? undefined;
  }

  /**
   * Claims the tasks due at `now`: each moves on to its next time (or to `done`) in one
   * conditional update; the ones this call moved are returned, each to run once.
   */
  async claimDue(now: Date = this.clock()): Promise<TaskRow[]> {
    if (!this.anyActive()) return [];
    const due = await this.db.task.findMany({ where: { status: 'active', nextRunAt: { lte: now } }, orderBy: { nextRunAt: 'asc' } });
    const claimed: TaskRow[] = [];
    for (const task of due) {
      const next = task.cron !== null ? await nextCronRun(task.cron, task.timezone, now).catch(() => null) : null;
      const { count } = await this.db.task.updateMany({
        where: { id: task.id, status: 'active', nextRunAt: task.nextRunAt },
        data: next ? { nextRunAt: next, lastRunAt: now } : { status: 'done', nextRunAt: null, lastRunAt: now },
      });
      if (count === 1) claimed.push(task);
    }
    if (claimed.length) this.onChange();
    return claimed;
  }

  /** How a claimed task's turn ended (shown to nobody yet; kept for diagnostics and the export). */
  async recordOutcome(id: string, outcome: 'ok' | 'failed' | 'interrupted' | 'budget'): Promise<void> {
    await this.db.task.updateMany({ where: { id }, data: { lastOutcome: outcome } });
  }
}
