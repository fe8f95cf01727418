/**
 * Scheduled tasks: `POST /tasks` (201), `GET /tasks`, `PATCH /tasks/{id}`, `DELETE /tasks/{id}`
 * (204); docs/api.md, "Scheduled tasks".
 */
import { z } from 'zod';
import { Task, TaskCreateInput, TaskIdInput, TaskList, TaskPatchInput } from '@contracts/agent/tasks.js';
import { agentProcedure, router } from '../trpc.js';

export const tasksRouter = router({
  create: agentProcedure
    .meta({
      openapi: { method: 'POST', path: '/tasks', summary: 'Schedule a task: one-shot (`at`) or recurring (`cron` in `timezone`); 201' },
      rest: { kind: 'created' },
      errors: ['INVALID_SCHEDULE', 'TASK_LIMIT'],
    })
    .input(TaskCreateInput)
    .output(Task)
    .mutation(({ input, ctx }) => ctx.services.tasks.store.create(input)),

  list: agentProcedure
    .meta({ openapi: { method: 'GET', path: '/tasks', summary: 'Scheduled tasks: active ones by next run, then paused and done ones' } })
    .input(z.void())
    .output(TaskList)
    .query(async ({ ctx }) => ({ tasks: await ctx.services.tasks.store.list() })),

  update: agentProcedure
    .meta({
      openapi: { method: 'PATCH', path: '/tasks/{id}', summary: 'Pause or resume a task, and change its prompt' },
      errors: ['TASK_NOT_FOUND', 'TASK_FINISHED', 'INVALID_SCHEDULE'],
    })
    .input(TaskPatchInput)
    .output(Task)
    .mutation(({ input, ctx }) => ctx.services.tasks.store.update(input)),

  delete: agentProcedure
    .meta({ openapi: { method: 'DELETE', path: '/tasks/{id}', summary: 'Delete a task (204)' }, rest: { kind: 'empty' }, errors: ['TASK_NOT_FOUND'] })
    .input(TaskIdInput)
    .output(z.void())
    .mutation(({ input, ctx }) => ctx.services.tasks.store.delete(input.id)),
});
