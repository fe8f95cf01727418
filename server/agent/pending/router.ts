/**
 * `GET /pending`: collects the pending messages (returned ones are removed). Over tRPC it is the
 * mutation `pending.collect` (it changes state, so it is not a cacheable query).
 */
import { z } from 'zod';
import { agentProcedure, router } from '../trpc.js';
import { PendingList } from '@contracts/agent/pending.js';

export const pendingRouter = router({
  collect: agentProcedure
    .meta({ openapi: { method: 'GET', path: '/pending', summary: 'Collect the pending messages; the returned ones are removed' } })
    .input(z.void())
    .output(PendingList)
    .mutation(async ({ ctx }) => ({
      messages: (await ctx.services.pending.collect()).map(({ chat_id, content, source, created_at }) => ({ chat_id, content, source, created_at })),
    })),
});
