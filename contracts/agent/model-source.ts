/**
 * What an agent's model call is for, as it tells its egress gateway (docs/api.md, "Model
 * budget"): every call is counted against the user's daily budget by this source, and a
 * proactive one (a heartbeat, a scheduled task) is admitted only when it fits under the ceiling
 * whole. The agent also asks the gateway, before a proactive turn, whether one may run now
 * (`GATEWAY_BUDGET_PATH` on `GATEWAY_SELF_HOST`): a turn that would cross the budget does not
 * start. The source only sorts an agent's own spending; claiming another one moves no budget.
 */
import { z } from 'zod';

export const MODEL_SOURCES = ['chat', 'heartbeat', 'task', 'subagent'] as const;
export const ModelSource = z.enum(MODEL_SOURCES);
export type ModelSource = z.infer<typeof ModelSource>;

/** Turns no person is waiting for: they never take the budget past its ceiling. */
export const PROACTIVE_SOURCES: readonly ModelSource[] = ['heartbeat', 'task'];

/** The request header a model call names its source in; the gateway reads and removes it. */
export const MODEL_SOURCE_HEADER = 'x-model-source';

/** The host on which the gateway answers for itself rather than forwarding (port 80, which clients leave out of Host). */
export const GATEWAY_SELF_HOST = 'egress-gateway.internal';
export const GATEWAY_BUDGET_PATH = '/budget';

/** `GET /budget?source=task` on the gateway: whether a proactive turn may start now. */
export const ProactiveBudget = z.object({
  allowed: z.boolean(),
  /** Tokens the user spent today; `limit` null: no ceiling. */
  used: z.number(),
  limit: z.number().nullable(),
  resets_at: z.string(),
});
export type ProactiveBudget = z.infer<typeof ProactiveBudget>;
