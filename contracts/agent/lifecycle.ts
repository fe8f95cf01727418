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
  }),
  /** ISO time; null: nothing scheduled. */
  next_wake_at: z.string().nullable(),
});
export type LifecycleReport = z.infer<typeof LifecycleReport>;
