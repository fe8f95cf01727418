/**
 * Wire shapes of the scheduled tasks (`/tasks`, docs/api.md "Scheduled tasks"), shared by the
 * agent, the account service's proxy and the web client. A task is one-shot (`at`, ISO 8601 with
 * an offset) or recurring (`cron`, five fields read in an IANA `timezone`); exactly one of them.
 * Whether a schedule is possible (a past `at`, a cron that never fires, an unknown zone, runs
 * closer than the minimum interval) is the agent's check (server/agent/tasks/schedule.ts): 400
 * INVALID_SCHEDULE.
 */
import { z } from 'zod';
import { ChatId } from './chat.js';

/** Longest task prompt: a task is an instruction, not a document (attach files in the workspace instead). */
export const TASK_PROMPT_MAX_CHARS = 4_000;

export const TaskId = z
  .string()
  .regex(/^task_[0-9a-f]{16}$/, 'not a task id')
  .describe('`task_` and 16 hex digits');

export const TaskPrompt = z.string().max(TASK_PROMPT_MAX_CHARS).regex(/\S/, 'prompt must not be empty or blank');

/** Five cron fields (minute hour day-of-month month day-of-week); bounded before anything parses it. */
export const TaskCron = z.string().max(200);
/** An IANA zone name (`Europe/Berlin`); checked against the runtime's zone database. */
export const TaskTimezone = z.string().min(1).max(64);
export const TaskAt = z.iso.datetime({ offset: true });

export const TaskCreateInput = z
  .object({
    prompt: TaskPrompt,
    chat_id: ChatId.optional().describe('the chat the task runs in; omitted: a chat of its own'),
    at: TaskAt.optional().describe('one-shot: when, ISO 8601 with an offset'),
    cron: TaskCron.optional().describe('recurring: five cron fields'),
    timezone: TaskTimezone.optional().describe("IANA zone the cron is read in; default: the user's zone (as kept on the account), else UTC"),
  })
  .refine((input) => (input.at === undefined) !== (input.cron === undefined), { message: 'give exactly one of at and cron', path: ['at'] });
export type TaskCreateInput = z.infer<typeof TaskCreateInput>;

export const TaskStatus = z.enum(['active', 'paused', 'done']);
export type TaskStatus = z.infer<typeof TaskStatus>;

export const Task = z.object({
  id: TaskId,
  prompt: z.string(),
  chat_id: z.string(),
  at: z.string().optional(),
  cron: z.string().optional(),
  timezone: z.string(),
  status: TaskStatus,
  /** ISO 8601 UTC (`…Z`); null while paused and once a one-shot task has run. */
  next_run_at: z.string().nullable(),
});
export type Task = z.infer<typeof Task>;

export const TaskList = z.object({ tasks: z.array(Task) });
export const TaskIdInput = z.object({ id: TaskId });
export const TaskPatchInput = z.object({ id: TaskId, status: z.enum(['active', 'paused']), prompt: TaskPrompt.optional() });
export type TaskPatchInput = z.infer<typeof TaskPatchInput>;

/** The user's zone, told to a running agent when it changes on the account (not proxied: the account's own call). */
export const TaskZoneInput = z.object({ timezone: TaskTimezone });
