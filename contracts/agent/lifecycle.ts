/** The agent's answer to `GET /lifecycle` (`health.lifecycle`): what the account service's provisioner reads to let it sleep. */
import { z } from 'zod';

export const LifecycleReport = z.object({
  busy: z.boolean(),
  activity: z.object({
    chat_runs: z.number().int(),
    subagent_runs: z.number().int(),
    heartbeat: z.boolean(),
    requests: z.number().int(),
    messenger: z.boolean(),
    /** Scheduled tasks' turns running (absent from agents older than tasks). */
    task_runs: z.number().int().optional(),
  }),
  /** ISO time: the next heartbeat or scheduled task, whichever is first; null: nothing scheduled. */
  next_wake_at: z.string().nullable(),
});
export type LifecycleReport = z.infer<typeof LifecycleReport>;
