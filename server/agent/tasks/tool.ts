/**
 * `schedule_task`: how "remind me at 9 tomorrow" or "every weekday at 8, summarise my inbox file"
 * said in a chat becomes a task (and how the model lists and cancels them). Given to the owner's
 * chat runs, never to a Telegram contact's, a subagent or a heartbeat. A task made here runs in
 * the chat it was asked in. The store's limits hold here as on the API (TASKS_MAX, the minimum
 * interval): a refusal is a tool error the model reads, so a prompt that asks for thousands of
 * tasks gets as many as the limit leaves room for, and then only errors.
 */
import { z } from 'zod';
import { TASK_PROMPT_MAX_CHARS, TaskAt, TaskCron, TaskId, TaskTimezone } from '@contracts/agent/tasks.js';
import { AppError } from '../../common/errors.js';
import { defineTool, type AgentToolSet } from '../tools/types.js';
import type { TaskStore } from './tasks.js';
import type { UserZone } from './zone.js';

const ScheduleTaskInput = z.object({
  action: z.enum(['create', 'list', 'cancel']),
  prompt: z
    .string()
    .max(TASK_PROMPT_MAX_CHARS)
    .optional()
    .describe('create: what to do when it runs, written as an instruction to yourself (e.g. "Remind the user to call the dentist")'),
  at: TaskAt.optional().describe('create, one-shot: when, ISO 8601 with an offset, e.g. 2026-12-01T09:00:00+01:00'),
  cron: TaskCron.optional().describe('create, recurring: five cron fields, e.g. "0 8 * * 1-5" for weekdays at 08:00'),
  timezone: TaskTimezone.optional().describe("create: the IANA zone the cron is read in, e.g. Europe/Berlin; default: the user's zone"),
  id: TaskId.optional().describe('cancel: the task id (from list)'),
});

export function scheduleTaskTool(store: TaskStore, opts: { chatId: string; zone: UserZone; now?: Date }): AgentToolSet {
  // The user's local time and offset, so that "at 9 tomorrow" becomes their 9 o'clock: made per run, it is current.
  const where = opts.zone.known
    ? `The user's time zone is ${opts.zone.get()}; it is now ${opts.zone.localTime(opts.now)} there.`
    : `The user's time zone is not known; it is now ${opts.zone.localTime(opts.now)}.`;
  return {
    schedule_task: defineTool({
      description:
        'Scheduled tasks: `create` one that runs a prompt later in this chat (one-shot with `at`, or recurring with `cron` and `timezone`), ' +
        '`list` them, or `cancel` one by `id`. At its time the prompt runs as a turn of yours and your answer is delivered to the user. ' +
        `${where} Read times the user gives in that zone: write \`at\` with its offset, and leave \`timezone\` out (it defaults to the user's).`,
      inputSchema: ScheduleTaskInput,
      async execute(input) {
        if (input.action === 'list') return { tasks: await store.list() };
        if (input.action === 'cancel') {
          if (!input.id) throw new AppError(400, 'VALIDATION_FAILED', 'cancel needs the task id');
          await store.delete(input.id);
          return { cancelled: input.id };
        }
        if (!input.prompt?.trim()) throw new AppError(400, 'VALIDATION_FAILED', 'create needs a prompt');
        if ((input.at === undefined) === (input.cron === undefined)) throw new AppError(400, 'VALIDATION_FAILED', 'create needs exactly one of at and cron');
        return store.create({ prompt: input.prompt, chat_id: opts.chatId, at: input.at, cron: input.cron, timezone: input.timezone });
      },
    }),
  };
}
