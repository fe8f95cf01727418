import { z } from 'zod';
import { AGENT_VERSION } from '../config.js';
import { LifecycleReport } from '@contracts/agent/lifecycle.js';
import { lifecycleReport } from '../lifecycle.js';
import { agentRoute, publicProcedure, routeMeta, router } from '../trpc.js';

export const AgentHealth = z.object({ status: z.literal('ok'), agent_name: z.string(), version: z.string() });

export const healthRouter = router({
  get: publicProcedure
    .meta(routeMeta('health.get', { summary: 'Agent health (no auth)', public: true }))
    .input(z.void())
    .output(AgentHealth)
    .query(({ ctx }) => ({ status: 'ok' as const, agent_name: ctx.services.config.name, version: AGENT_VERSION })),

  /** For the account service's idle sweep and wake scheduler (lifecycle.ts). */
  lifecycle: agentRoute('health.lifecycle', { summary: 'Whether the agent is busy, and when it next wants to wake' })
    .output(LifecycleReport)
    .query(({ ctx }) => lifecycleReport(ctx.services)),
});
