/** Subagent procedures: `GET /subagents`, `GET /subagents/{run_id}`, `POST /subagents/{run_id}/stop`. */
import { agentRoute, router } from '../trpc.js';
import { StopResult, SubagentDetail, SubagentList } from '@contracts/agent/subagents.js';

export const subagentsRouter = router({
  list: agentRoute('subagents.list', { summary: 'Subagent runs: running first, then newest first' })
    .output(SubagentList)
    .query(async ({ ctx }) => ({ subagents: await ctx.services.subagents.list() })),

  get: agentRoute('subagents.get', { summary: 'One subagent run, with its full result', errors: ['SUBAGENT_NOT_FOUND'] })
    .output(SubagentDetail)
    .query(({ input, ctx }) => ctx.services.subagents.get(input.run_id)),

  stop: agentRoute('subagents.stop', { summary: 'Stop a running run (it ends as failed, error cancelled); 409 when not running' })
    .output(StopResult)
    .mutation(({ input, ctx }) => ctx.services.subagents.stop(input.run_id)),
});
