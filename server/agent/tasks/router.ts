/**
 * Scheduled tasks: `POST /tasks` (201), `GET /tasks`, `PATCH /tasks/{id}`, `DELETE /tasks/{id}`
 * (204); docs/api.md, "Scheduled tasks". Routes and inputs from their rows of @contracts/agent/routes.ts.
 */
import { z } from 'zod';
import { Task, TaskList } from '@contracts/agent/tasks.js';
import { agentRoute, router } from '../trpc.js';

export const tasksRouter = router({
  create: agentRoute('tasks.create', {
    summary: 'Schedule a task: one-shot (`at`) or recurring (`cron` in `timezone`); 201',
    rest: { kind: 'created' },
    errors: ['INVALID_SCHEDULE', 'TASK_LIMIT'],
  })
    .output(Task)
    .mutation(({ input, ctx }) => ctx.services.tasks.store.create(input)),

  list: agentRoute('tasks.list', { summary: 'Scheduled tasks: active ones by next run, then paused and done ones' })
    .output(TaskList)
    .query(async ({ ctx }) => ({ tasks: await ctx.services.tasks.store.list() })),

  update: agentRoute('tasks.update', {
    summary: 'Pause or resume a task, and change its prompt',
    errors: ['TASK_NOT_FOUND', 'TASK_FINISHED', 'INVALID_SCHEDULE'],
  })
    .output(Task)
    .mutation(({ input, ctx }) => ctx.services.tasks.store.update(input)),

  // The account service's call when the user's zone changes while the agent runs (not proxied to users).
  setTimezone: agentRoute('tasks.setTimezone', { summary: "Keep the user's time zone: the default of new tasks' `timezone`", errors: ['INVALID_SCHEDULE'] })
    .output(z.void())
    .mutation(({ input, ctx }) => ctx.services.tasks.zone.set(input.timezone)),

  delete: agentRoute('tasks.delete', { summary: 'Delete a task (204)', rest: { kind: 'empty' }, errors: ['TASK_NOT_FOUND'] })
    .output(z.void())
    .mutation(({ input, ctx }) => ctx.services.tasks.store.delete(input.id)),
});
