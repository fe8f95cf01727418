/** Subagent procedures: `GET /subagents`, `GET /subagents/{run_id}`, `POST /subagents/{run_id}/stop`. */
import { z } from 'zod';
import { agentProcedure, router } from '../trpc.js';
import { RunIdInput, StopResult, SubagentDetail, SubagentList } from '@contracts/agent/subagents.js';

export const subagentsRouter = router({
  list: agentProcedure
    .meta({ openapi: { method: 'GET', path: '/subagents', summary: 'Subagent runs: running first, then newest first' } })
    .input(z.void())
    .output(SubagentList)
    .query(async ({ ctx }) => ({ subagents: await ctx.services.subagents.list() })),

  get: agentProcedure
    .meta({ openapi: { method: 'GET', path: '/subagents/{run_id}', summary: 'One subagent run, with its full result' }, errors: ['SUBAGENT_NOT_FOUND'] })
    .input(RunIdInput)
    .output(SubagentDetail)
    .query(({ input, ctx }) => ctx.services.subagents.get(input.run_id)),

  stop: agentProcedure
    .meta({
      openapi: { method: 'POST', path: '/subagents/{run_id}/stop', summary: 'Stop a running run (it ends as failed, error cancelled); 409 when not running' },
    })
    .input(RunIdInput)
    .output(StopResult)
    .mutation(({ input, ctx }) => ctx.services.subagents.stop(input.run_id)),
});
